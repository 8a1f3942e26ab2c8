package embedetcd

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tsdb/tsdb/internal/testcerts"
	"github.com/tsdb/tsdb/internal/tlsconfig"
)

// TestStartTLSAndAuth (issue 14 item 9): with a certificate and a root
// password the server serves https with authentication on; Client logs in,
// a client with a wrong password is refused, and a restart on the same
// data (auth already on) works.
func TestStartTLSAndAuth(t *testing.T) {
	ca := testcerts.NewCA(t, "etcd-ca")
	cert, key := ca.Issue(t, "etcd")
	dir := t.TempDir()
	cfg := Config{Dir: dir, Fast: true, CertFile: cert, KeyFile: key, CAFile: ca.CAFile, RootPassword: "pw"}
	for round := range 2 {
		e, err := Start(cfg)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !strings.HasPrefix(e.Endpoint(), "https://") {
			t.Fatalf("endpoint %s", e.Endpoint())
		}
		cli, err := e.Client()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := cli.Put(ctx, "/k", "v"); err != nil {
			t.Fatalf("round %d: put as root: %v", round, err)
		}
		cli.Close()
		tc, err := tlsconfig.Client(ca.CAFile, "", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, pw := range []string{"", "wrong"} {
			bad, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint()}, TLS: tc, Username: "root", Password: pw,
				DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err == nil {
				_, err = bad.Get(ctx, "/k")
				bad.Close()
			}
			if err == nil {
				t.Fatalf("round %d: a client with password %q read the key", round, pw)
			}
		}
		cancel()
		e.Close()
	}
}
