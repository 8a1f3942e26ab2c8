// Package etcdclient opens a tsdb server's etcd client from its flags
// (endpoints, TLS files, credentials). Invariants: the client connects
// lazily (New does not wait for etcd); it uses TLS when a TLS file is given
// or an endpoint is https, and plain connections otherwise; and it retries
// a lost connection at most every 2 s (gRPC's default backoff grows to 2
// minutes, which would keep a server cut off long after an etcd outage).
// The package starts no goroutine of its own; the client's (clientv3's)
// stop when the caller closes it.
package etcdclient

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/tsdb/tsdb/internal/tlsconfig"
)

// Config names the etcd cluster and how to authenticate to it.
type Config struct {
	// Endpoints are the etcd client URLs.
	Endpoints []string
	// CertFile and KeyFile are a client certificate (both or neither);
	// CAFile the CAs etcd's certificate must chain to (empty: the
	// system's roots).
	CAFile, CertFile, KeyFile string
	// Username and Password authenticate to an etcd with auth enabled;
	// empty: no authentication.
	Username, Password string
}

// UsesTLS reports whether the connection uses TLS: a TLS file is given or
// an endpoint is https.
func (c Config) UsesTLS() bool {
	if c.CAFile != "" || c.CertFile != "" {
		return true
	}
	for _, e := range c.Endpoints {
		if strings.HasPrefix(e, "https://") {
			return true
		}
	}
	return false
}

// New creates the client; it connects lazily.
func New(c Config) (*clientv3.Client, error) {
	var tlsc *tls.Config
	if c.UsesTLS() {
		var err error
		if tlsc, err = tlsconfig.Client(c.CAFile, c.CertFile, c.KeyFile); err != nil {
			return nil, fmt.Errorf("etcd TLS: %w", err)
		}
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints,
		DialTimeout: 5 * time.Second,
		TLS:         tlsc,
		Username:    c.Username,
		Password:    c.Password,
		Logger:      zap.NewNop(),
		// gRPC's default reconnect backoff grows to 2 minutes: after an
		// etcd outage the server would stay cut off long after etcd is
		// back. Retry the connection at most every 2 s instead.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return cli, nil
}
