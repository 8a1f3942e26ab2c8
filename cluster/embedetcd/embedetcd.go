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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

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
	// server is ready in tens of milliseconds. For tests.
	Fast bool
	// Logger receives etcd's logs; nil silences them.
	Logger *zap.Logger
	// StartTimeout bounds the wait for the server to become ready; default 30s.
	StartTimeout time.Duration
}

// Etcd is a running embedded etcd server.
type Etcd struct {
	e        *embed.Etcd
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
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", cfg.Host, cfg.ClientPort)}
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
	return &Etcd{e: e, endpoint: "http://" + e.Clients[0].Addr().String()}, nil
}

// Endpoint returns the client URL, e.g. http://127.0.0.1:2379.
func (e *Etcd) Endpoint() string { return e.endpoint }

// Client returns a new client of this server; the caller closes it.
func (e *Etcd) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{e.endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
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
