package localcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/node"
)

// Defaults of a Config.
const (
	DefaultStartTimeout = 2 * time.Minute
	DefaultStopTimeout  = 30 * time.Second
	DefaultLogLevel     = "info"
)

// Config describes the cluster to start.
type Config struct {
	// Servers is the number of server processes (at least 1).
	Servers int
	// Dir holds etcd's data and each server's data directory and log
	// (sN/ and sN.log). Empty: a new temporary directory.
	Dir string
	// Keep leaves Dir in place on Close (a temporary one is otherwise
	// removed; a given Dir is never removed).
	Keep bool
	// Command is the tsdb executable; Args come before the server's flags
	// (normally ["server"]). Env is added to each process's environment.
	Command string
	Args    []string
	Env     []string
	// WriteLimit is each server's --write-limit in bytes/s (passed only
	// when > 0).
	WriteLimit int64
	// Presplit* are the servers' --presplit-* flags (passed only when > 0).
	PresplitMinWidth, PresplitMaxWidth, PresplitHorizon, PresplitInterval time.Duration
	// ExtraFlags are appended to every server's flags (a later flag wins).
	ExtraFlags []string
	// LogLevel is the servers' --log-level. Default info.
	LogLevel string
	// StartTimeout bounds the wait for all servers to be ready; StopTimeout
	// the wait after SIGTERM before SIGKILL.
	StartTimeout, StopTimeout time.Duration
	// Logger receives progress notes; nil discards.
	Logger *slog.Logger
}

func (c *Config) ensureDefaults() error {
	if c.Servers < 1 || c.Command == "" || c.WriteLimit < 0 {
		return fmt.Errorf("%w: want Servers >= 1 (got %d), a Command, WriteLimit >= 0", ErrConfig, c.Servers)
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Cluster is a running local cluster.
type Cluster struct {
	cfg       Config
	dir       string
	removeDir bool
	etcd      *embedetcd.Etcd
	procs     []*proc
	// secretFile holds the random cluster secret every server gets, so
	// the servers' internal API is never open.
	secretFile string
}

// proc is one server process.
type proc struct {
	id, addr string
	cmd      *exec.Cmd
	logPath  string
	done     chan struct{} // closed when the process has exited
}

// Start starts etcd and the servers and waits until all are ready. On
// error everything started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if err := cfg.ensureDefaults(); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, dir: cfg.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "tsdb-loadtest-"); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
		c.removeDir = !cfg.Keep
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	c.etcd, err = embedetcd.Start(embedetcd.Config{Dir: filepath.Join(c.dir, "etcd"), Fast: true})
	if err != nil {
		return nil, fmt.Errorf("%w: etcd: %w", ErrStart, err)
	}
	if c.secretFile, err = writeSecret(c.dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	ports, err := freePorts(cfg.Servers)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	for i, port := range ports {
		if err := c.startProc(fmt.Sprintf("s%d", i+1), net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
			return nil, err
		}
	}
	cfg.Logger.Info("local cluster starting", "servers", cfg.Servers, "dir", c.dir, "etcd", c.etcd.Endpoint())
	return c, c.waitReady(ctx)
}

// freePorts returns n distinct loopback ports free at the moment.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// serverFlags returns the arguments of server id listening on addr.
func (c *Cluster) serverFlags(id, addr string) []string {
	args := append(append([]string(nil), c.cfg.Args...),
		"--id", id, "--listen", addr, "--data", filepath.Join(c.dir, id), "--etcd", c.etcd.Endpoint(),
		"--cluster-secret-file", c.secretFile)
	return append(args, c.SharedFlags()...)
}

// writeSecret writes a random cluster secret (32 bytes from crypto/rand,
// hex) to dir/cluster-secret, readable by its owner only, and returns the
// file's path.
func writeSecret(dir string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a cluster secret: %w", err)
	}
	path := filepath.Join(dir, "cluster-secret")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the cluster secret: %w", err)
	}
	return path, nil
}

// SharedFlags returns the flags every server is started with beyond its
// own id, addresses and directories (for a report).
func (c *Cluster) SharedFlags() []string {
	cfg := &c.cfg
	args := []string{"--log-level", cfg.LogLevel, "--min-servers", strconv.Itoa(cfg.Servers)}
	if cfg.WriteLimit > 0 {
		args = append(args, "--write-limit", strconv.FormatInt(cfg.WriteLimit, 10))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--presplit-min-width", cfg.PresplitMinWidth}, {"--presplit-max-width", cfg.PresplitMaxWidth},
		{"--presplit-horizon", cfg.PresplitHorizon}, {"--presplit-interval", cfg.PresplitInterval},
	} {
		if d.v > 0 {
			args = append(args, d.flag, d.v.String())
		}
	}
	// The servers share this machine's memory: each takes its share of
	// the automatic block cache, not an eighth of the machine each.
	args = append(args, "--cache-size", strconv.FormatInt(node.AutoCacheSize(cfg.Servers), 10))
	return append(args, cfg.ExtraFlags...)
}

// startProc starts one server process, logging to DIR/id.log.
func (c *Cluster) startProc(id, addr string) error {
	p := &proc{id: id, addr: addr, logPath: filepath.Join(c.dir, id+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	p.cmd = exec.Command(c.cfg.Command, c.serverFlags(id, addr)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.Env = append(os.Environ(), c.cfg.Env...)
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%w: server %s: %w", ErrStart, id, err)
	}
	c.procs = append(c.procs, p)
	go func() {
		p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return nil
}

// waitReady polls until every server answers /healthz and the cluster
// lists every server, a server exits, or the start timeout passes.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	clients := make([]*api.Client, len(c.procs))
	for i, p := range c.procs {
		cl, err := api.NewClient("http://"+p.addr, api.Options{Timeout: 2 * time.Second, Attempts: 1, HTTPClient: hc})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrStart, err)
		}
		clients[i] = cl
	}
	for {
		for _, p := range c.procs {
			select {
			case <-p.done:
				return fmt.Errorf("%w: server %s exited: %s", ErrStart, p.id, logTail(p.logPath))
			default:
			}
		}
		if ready(ctx, clients) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: the servers were not ready within %v (logs in %s): %w",
				ErrStart, c.cfg.StartTimeout, c.dir, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ready reports whether every server is healthy and the first lists them
// all.
func ready(ctx context.Context, clients []*api.Client) bool {
	for _, cl := range clients {
		if cl.Get(ctx, "/healthz", nil, nil) != nil {
			return false
		}
	}
	listed, err := clients[0].Cluster(ctx)
	return err == nil && len(listed.Servers) >= len(clients)
}

// logTail returns the last lines of a log file, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// URLs returns the servers' base URLs, in id order (s1, s2, ...).
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.procs))
	for i, p := range c.procs {
		out[i] = "http://" + p.addr
	}
	return out
}

// Dir returns the directory holding etcd's and the servers' data and logs.
func (c *Cluster) Dir() string { return c.dir }

// EtcdEndpoint returns the embedded etcd's client URL.
func (c *Cluster) EtcdEndpoint() string {
	if c.etcd == nil {
		return ""
	}
	return c.etcd.Endpoint()
}

// Close stops the servers (SIGTERM, then SIGKILL after StopTimeout),
// closes etcd and removes a temporary directory unless Keep. It returns
// ErrStop naming any server that had to be killed.
func (c *Cluster) Close() error {
	var errs []error
	for _, p := range c.procs {
		terminate(p.cmd.Process)
	}
	deadline := time.NewTimer(c.cfg.StopTimeout)
	defer deadline.Stop()
	for _, p := range c.procs {
		select {
		case <-p.done:
			continue
		case <-deadline.C:
		}
		p.cmd.Process.Kill()
		<-p.done
		errs = append(errs, fmt.Errorf("%w: server %s killed after %v", ErrStop, p.id, c.cfg.StopTimeout))
		deadline.Reset(0)
	}
	c.procs = nil
	if c.etcd != nil {
		c.etcd.Close()
		c.etcd = nil
	}
	if c.removeDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrStop, err))
		}
	}
	return errors.Join(errs...)
}
