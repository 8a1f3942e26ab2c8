package node

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// etcdctlPath returns the etcdctl the README's inspection line uses: the one
// `make etcdctl` built (TSDB_ETCDCTL, which `make test` sets), or one built
// now from the tools module, exactly as `make etcdctl` does.
func etcdctlPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TSDB_ETCDCTL"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("TSDB_ETCDCTL=%s: %v", p, err)
		}
		return p
	}
	out := filepath.Join(t.TempDir(), "etcdctl")
	cmd := exec.Command("go", "build", "-o", out, "go.etcd.io/etcd/etcdctl/v3")
	cmd.Dir = "../tools"
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build etcdctl as `make etcdctl` does: %v\n%s", err, b)
	}
	return out
}

// readmeEtcdctlLine returns the argv of the README's etcdctl command.
func readmeEtcdctlLine(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "./bin/etcdctl ") {
			return strings.Fields(line)
		}
	}
	t.Fatal("README.md has no ./bin/etcdctl line")
	return nil
}

// TestREADMEEtcdctlLine runs the README's etcdctl line against a real
// cluster's embedded etcd and checks it prints the documented TableConfig.
func TestREADMEEtcdctlLine(t *testing.T) {
	c := startCluster(t, 3)
	c.createTable("s1", "weather", 0)
	argv := readmeEtcdctlLine(t)
	bin := etcdctlPath(t)
	for i, a := range argv {
		argv[i] = strings.Replace(a, "http://127.0.0.1:2379", c.etcd.Endpoint(), 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != "/tsdb/tables/weather" {
		t.Fatalf("etcdctl printed %q, want the key and its value", out)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &doc); err != nil {
		t.Fatalf("the value etcdctl prints is not JSON: %v: %s", err, lines[1])
	}
	if diff := shapeDiff("", readmeTableConfig(t), doc); diff != "" {
		t.Fatalf("etcdctl prints a TableConfig unlike the README's: %s\n%s", diff, lines[1])
	}
	if doc["name"] != "weather" || doc["replication_factor"] != float64(3) {
		t.Fatalf("values: %s", lines[1])
	}
}
