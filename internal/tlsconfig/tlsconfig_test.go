package tlsconfig

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/tsdb/tsdb/internal/testcerts"
)

// TestConfigs: good files load (TLS 1.2 at least, the CA as the only root,
// the client certificate presented); a half pair, a file that is not PEM
// and a missing file are errors.
func TestConfigs(t *testing.T) {
	ca := testcerts.NewCA(t, "ca")
	cert, key := ca.Issue(t, "leaf")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Server(cert, key)
	if err != nil || len(s.Certificates) != 1 || s.MinVersion != tls.VersionTLS12 {
		t.Fatalf("server config: %+v %v", s, err)
	}
	c, err := Client(ca.CAFile, cert, key)
	if err != nil || c.RootCAs == nil || len(c.Certificates) != 1 || c.MinVersion != tls.VersionTLS12 {
		t.Fatalf("client config: %+v %v", c, err)
	}
	if c, err := Client("", "", ""); err != nil || c.RootCAs != nil {
		t.Fatalf("client config with the system roots: %+v %v", c, err)
	}
	for name, f := range map[string]func() error{
		"server without key":      func() error { _, err := Server(cert, ""); return err },
		"server with junk key":    func() error { _, err := Server(cert, junk); return err },
		"client with junk CA":     func() error { _, err := Client(junk, "", ""); return err },
		"client with missing CA":  func() error { _, err := Client(junk+".missing", "", ""); return err },
		"client cert without key": func() error { _, err := Client("", cert, ""); return err },
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
