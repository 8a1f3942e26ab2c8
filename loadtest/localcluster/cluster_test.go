//go:build unix

package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/node"
)

// fakeEnv makes the test binary act as a fake tsdb server: "ok" serves
// /healthz and /api/v1/cluster, "exit" fails at start, "stubborn" serves
// but ignores SIGTERM.
const fakeEnv = "LOCALCLUSTER_FAKE_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		fakeServer(mode, os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

// flagValue returns the value after flag in args.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// fakeServer records its arguments in DATA/args and serves on --listen.
func fakeServer(mode string, args []string) {
	if mode == "exit" {
		fmt.Println("tsdb: unknown flag: --write-limit")
		os.Exit(2)
	}
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	data := flagValue(args, "--data")
	os.MkdirAll(data, 0o755)
	os.WriteFile(filepath.Join(data, "args"), []byte(strings.Join(args, " ")), 0o644)
	n, _ := strconv.Atoi(flagValue(args, "--min-servers"))
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"status":"ok"}`)) })
	mux.HandleFunc("/api/v1/cluster", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(api.ClusterResponse{Servers: make([]api.ServerInfo, n)})
	})
	http.ListenAndServe(flagValue(args, "--listen"), mux)
}

func fakeConfig(mode string, servers int) Config {
	return Config{
		Servers: servers, Command: os.Args[0], Args: []string{"server"}, Env: []string{fakeEnv + "=" + mode},
		StartTimeout: 60 * time.Second, StopTimeout: 10 * time.Second,
	}
}

// TestStartAndClose starts two fake servers, checks the flags they got and
// that they answer, then that Close stops them and removes the temporary
// directory.
func TestStartAndClose(t *testing.T) {
	cfg := fakeConfig("ok", 2)
	cfg.WriteLimit, cfg.PresplitMinWidth, cfg.PresplitInterval = 5000, time.Second, 2*time.Second
	cfg.ExtraFlags = []string{"--dead-after=10s"}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Dir()
	urls := c.URLs()
	if len(urls) != 2 || !strings.HasPrefix(c.EtcdEndpoint(), "http://127.0.0.1:") {
		t.Fatalf("urls %v, etcd %q", urls, c.EtcdEndpoint())
	}
	args, err := os.ReadFile(filepath.Join(dir, "s2", "args"))
	if err != nil {
		t.Fatal(err)
	}
	want := "server --id s2 --listen " + strings.TrimPrefix(urls[1], "http://") + " --data " + filepath.Join(dir, "s2") +
		" --etcd " + c.EtcdEndpoint() + " --cluster-secret-file " + filepath.Join(dir, "cluster-secret") + " --log-level info --min-servers 2 --write-limit 5000" +
		" --presplit-min-width 1s --presplit-interval 2s --cache-size " + strconv.FormatInt(node.AutoCacheSize(2), 10) + " --dead-after=10s"
	if string(args) != want {
		t.Errorf("server flags\n%s\nwant\n%s", args, want)
	}
	// Issue 14 item 8: the servers share a random cluster secret, so their
	// internal API is never open.
	if st, err := os.Stat(filepath.Join(dir, "cluster-secret")); err != nil || st.Size() < 32 || st.Mode().Perm() != 0o600 {
		t.Errorf("cluster secret file: %v, %v", st, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(urls[0] + "/healthz"); err == nil {
		t.Error("a server still answers after Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary dir left behind: %v", err)
	}
}

// TestStartFailsWhenAServerExits: the error names the server and quotes
// its log; the directory given is kept.
func TestStartFailsWhenAServerExits(t *testing.T) {
	cfg := fakeConfig("exit", 1)
	cfg.Dir = t.TempDir()
	_, err := Start(context.Background(), cfg)
	if !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "server s1 exited") ||
		!strings.Contains(err.Error(), "unknown flag: --write-limit") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "s1.log")); err != nil {
		t.Errorf("log of the given dir: %v", err)
	}
}

// TestCloseKillsAStubbornServer: a server ignoring SIGTERM is killed after
// StopTimeout, and Close says so.
func TestCloseKillsAStubbornServer(t *testing.T) {
	cfg := fakeConfig("stubborn", 1)
	cfg.StopTimeout = 200 * time.Millisecond
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, ErrStop) || !strings.Contains(err.Error(), "server s1 killed") {
		t.Fatalf("Close: %v, want ErrStop naming s1", err)
	}
}

func TestConfigRejects(t *testing.T) {
	for _, cfg := range []Config{{Servers: 0, Command: "x"}, {Servers: 1}, {Servers: 1, Command: "x", WriteLimit: -1}} {
		if _, err := Start(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
}
