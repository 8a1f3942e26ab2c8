package node

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStartRefusesAuthTokenWithoutSecret (issue 14 item 8): a server whose
// public API wants a bearer token and that has no cluster secret would
// leave /internal/ (read data, write rows with any version, commit
// METADATA ops) open to anyone; it refuses to start and says why.
func TestStartRefusesAuthTokenWithoutSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, Config{ID: "s1", Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		EtcdEndpoints: []string{"http://127.0.0.1:1"}, AuthToken: "tok"})
	if err == nil {
		stopNode(t, n)
		t.Fatal("a server with an auth token and no cluster secret started")
	}
	if !strings.Contains(err.Error(), "cluster secret") || !strings.Contains(err.Error(), "internal API") {
		t.Fatalf("refusal %q does not say why (cluster secret, internal API)", err)
	}
}
