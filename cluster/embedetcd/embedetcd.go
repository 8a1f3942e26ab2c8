// Package embedetcd starts a real, single-member etcd server inside the
// process. `tsdb dev` uses it so one command runs a whole cluster on a laptop,
// and tests of coordination use it so they run against the real thing
// (DESIGN.md section 2). Production points --etcd at an external cluster.
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"
)

// walSegmentBytes is the preallocated size of the embedded etcd's WAL
// segments (etcd's default is 64 MB): the TableConfigs and membership keys
// of a dev cluster take kilobytes, and a 64 MB segment is half the data
// directory of a small `tsdb dev` run (32 bytes per point of the peer
// harness's 2 M points; issue 17 counts bytes per point after shutdown).
const walSegmentBytes = 4 << 20

func init() {
	// A package variable of etcd's; set once, before any server starts
	// (every etcd of this process is an embedded one).
	wal.SegmentSizeBytes = walSegmentBytes
}

// Config says where and how to run the embedded etcd.
type Config struct {
	// Dir is the data directory. Required.
	Dir string
	// Host is the address to listen on; default 127.0.0.1.
	Host string
	// ClientPort is the client port; 0 picks a free one.
	ClientPort int
	// PeerPort is the peer port; 0 picks a free one.
	PeerPort int
	// Fast shortens raft ticks (10 ms heartbeat, 100 ms election) so the
	// server is ready in tens of milliseconds, and hashes passwords at
	// bcrypt's minimum cost. For tests.
	Fast bool
	// Logger receives etcd's logs; nil silences them.
	Logger *zap.Logger
	// StartTimeout bounds the wait for the server to become ready; default 30s.
	StartTimeout time.Duration
	// CertFile and KeyFile, when set, serve the client URL over https with
	// this certificate. CAFile is the CA Client verifies it against.
	CertFile, KeyFile, CAFile string
	// ClientCertAuth makes etcd require client certificates that chain to
	// CAFile; Client presents CertFile/KeyFile (which must allow client
	// authentication).
	ClientCertAuth bool
	// RootPassword, when set, enables etcd's authentication with the user
	// root and this password; Client logs in as root.
	RootPassword string
}

// Etcd is a running embedded etcd server.
type Etcd struct {
	e        *embed.Etcd
	cfg      Config
	endpoint string
}

// Start starts the server and waits until it serves clients.
func Start(cfg Config) (*Etcd, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedetcd: Dir is required")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	ec := embed.NewConfig()
	ec.Name = "tsdb-dev"
	ec.Dir = cfg.Dir
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	scheme := "http"
	if cfg.CertFile != "" {
		scheme = "https"
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
		if cfg.ClientCertAuth {
			// A trusted CA on the server side requires client certificates.
			ec.ClientTLSInfo.TrustedCAFile, ec.ClientTLSInfo.ClientCertAuth = cfg.CAFile, true
		}
	}
	clientURL := url.URL{Scheme: scheme, Host: fmt.Sprintf("%s:%d", cfg.Host, cfg.ClientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", cfg.Host, cfg.PeerPort)}
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{peerURL}
	ec.AdvertisePeerUrls = []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	// DESIGN.md section 3: keep the key history bounded.
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = "1h"
	if cfg.Fast {
		ec.TickMs, ec.ElectionMs = 10, 100
		// Password checks (RootPassword) at bcrypt's minimum cost: each
		// login takes microseconds, not tens of milliseconds (seconds
		// under the race detector).
		ec.BcryptCost = 4
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: start: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedetcd: server failed: %w", err)
	case <-time.After(cfg.StartTimeout):
		e.Close()
		return nil, fmt.Errorf("embedetcd: not ready after %v", cfg.StartTimeout)
	}
	et := &Etcd{e: e, cfg: cfg, endpoint: scheme + "://" + e.Clients[0].Addr().String()}
	if cfg.RootPassword != "" {
		if err := et.enableAuth(cfg.StartTimeout); err != nil {
			e.Close()
			return nil, err
		}
	}
	return et, nil
}

// enableAuth creates the user root with Config.RootPassword and turns
// authentication on, unless it is on already (a restart).
func (e *Etcd) enableAuth(timeout time.Duration) error {
	cli, err := e.client(false)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := cli.AuthStatus(ctx)
	if err != nil {
		return fmt.Errorf("embedetcd: auth status: %w", err)
	}
	if st.Enabled {
		return nil
	}
	if _, err := cli.UserAdd(ctx, "root", e.cfg.RootPassword); err != nil {
		return fmt.Errorf("embedetcd: add user root: %w", err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		return fmt.Errorf("embedetcd: grant root the root role: %w", err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("embedetcd: enable auth: %w", err)
	}
	return nil
}

// Endpoint returns the client URL, e.g. http://127.0.0.1:2379 (https with
// Config.CertFile).
func (e *Etcd) Endpoint() string { return e.endpoint }

// Client returns a new client of this server, with TLS and as root when so
// configured; the caller closes it.
func (e *Etcd) Client() (*clientv3.Client, error) {
	return e.client(true)
}

func (e *Etcd) client(login bool) (*clientv3.Client, error) {
	cc := clientv3.Config{
		Endpoints:   []string{e.endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
	if e.cfg.CertFile != "" {
		info := transport.TLSInfo{TrustedCAFile: e.cfg.CAFile}
		if e.cfg.ClientCertAuth {
			info.CertFile, info.KeyFile = e.cfg.CertFile, e.cfg.KeyFile
		}
		tc, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("embedetcd: client TLS: %w", err)
		}
		cc.TLS = tc
	}
	if login && e.cfg.RootPassword != "" {
		cc.Username, cc.Password = "root", e.cfg.RootPassword
	}
	return clientv3.New(cc)
}

// Close stops the server.
func (e *Etcd) Close() {
	e.e.Close()
}

// Ping checks that the server answers within the context's deadline.
func (e *Etcd) Ping(ctx context.Context) error {
	cli, err := e.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Get(ctx, "health")
	return err
}
