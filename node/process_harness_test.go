package node

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash tests run real `tsdb server` processes built from ../cmd/tsdb
// once per test binary.
var (
	tsdbBinOnce sync.Once
	tsdbBin     string
	tsdbBinErr  error
	tsdbBinDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tsdbBinDir != "" {
		os.RemoveAll(tsdbBinDir)
	}
	os.Exit(code)
}

// tsdbBinary builds the tsdb command (with the module's GOFLAGS) once.
func tsdbBinary(t testing.TB) string {
	t.Helper()
	tsdbBinOnce.Do(func() {
		tsdbBinDir, tsdbBinErr = os.MkdirTemp("", "tsdb-bin-")
		if tsdbBinErr != nil {
			return
		}
		tsdbBin = filepath.Join(tsdbBinDir, "tsdb")
		out, err := exec.Command("go", "build", "-o", tsdbBin, "../cmd/tsdb").CombinedOutput()
		if err != nil {
			tsdbBinErr = fmt.Errorf("go build ../cmd/tsdb: %v\n%s", err, out)
		}
	})
	if tsdbBinErr != nil {
		t.Fatal(tsdbBinErr)
	}
	return tsdbBin
}

// proc is one `tsdb server` process.
type proc struct {
	t    testing.TB
	args []string // extra flags of tsdb server
	id   string
	dir  string
	addr string
	etcd string
	cmd  *exec.Cmd
	done chan struct{}
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProc starts server id on a fresh port and waits for /healthz.
func startProc(t testing.TB, id, dir, etcdURL string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, id: id, dir: dir, addr: freeAddr(t), etcd: etcdURL, args: args}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *proc) start() {
	p.t.Helper()
	logf, err := os.OpenFile(filepath.Join(p.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(tsdbBinary(p.t), append([]string{"server", "--id", p.id, "--listen", p.addr, "--data", p.dir,
		"--etcd", p.etcd, "--log-level", "info",
		// As in startNode: off unless a test's args turn them back on
		// (the last value of a flag wins).
		"--presplit=false", "--rebalance=false", "--smear=false"}, p.args...)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() {
		p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
			p.t.Fatalf("server %s exited at start:\n%s", p.id, b)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("server %s not healthy after 60s", p.id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill9 kills the process with SIGKILL: no shutdown code runs.
func (p *proc) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends the process gracefully (SIGTERM), SIGKILL after 30s.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill9()
	}
}

func (p *proc) url() string { return "http://" + p.addr }

func (p *proc) client() *client { return &client{t: p.t, base: p.url()} }
