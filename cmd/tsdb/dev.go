package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tsdb/tsdb/cluster/embedetcd"
	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/internal/bytesize"
	"github.com/tsdb/tsdb/node"
)

func newDevCmd() *cobra.Command {
	var (
		servers, port, etcdPort        int
		data, tokenFile, secretFile    string
		pprofAddr                      string
		presplitOn                     bool
		sealQuiet, sealIdle, sealAfter time.Duration
		cacheSize                      int64
		mem                            memHeadFlags
		logs                           logFlags
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start a local cluster: embedded etcd plus servers on loopback",
		Long: `Start a real embedded etcd on 127.0.0.1:--etcd-port and --servers tsdb servers on
127.0.0.1:--port, --port+1, ..., with all data under --data. Prints the URLs and
curl examples, and stops cleanly on Ctrl-C or SIGTERM. Data survives a restart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if servers < 1 || servers > 16 {
				return fmt.Errorf("--servers %d: want 1 to 16", servers)
			}
			if err := validPort("port", port); err != nil {
				return err
			}
			if err := validPort("port", port+servers-1); err != nil {
				return fmt.Errorf("--port %d with --servers %d runs past port 65535", port, servers)
			}
			if err := validPort("etcd-port", etcdPort); err != nil {
				return err
			}
			if etcdPort >= port && etcdPort < port+servers {
				return fmt.Errorf("--etcd-port %d collides with the servers' ports %d-%d", etcdPort, port, port+servers-1)
			}
			log, err := logs.logger()
			if err != nil {
				return err
			}
			token, err := readSecretFile("auth-token-file", tokenFile)
			if err != nil {
				return err
			}
			secret, err := readSecretFile("cluster-secret-file", secretFile)
			if err != nil {
				return err
			}
			if secret == "" {
				// The internal API is never left open, not even on a laptop:
				// the servers of this process share a fresh random secret.
				if secret, err = randomSecret(); err != nil {
					return err
				}
			}
			stopPprof, err := startPprof(cmd.Context(), pprofAddr, log)
			if err != nil {
				return err
			}
			defer stopPprof()
			return runDev(cmd.Context(), cmd.OutOrStdout(), devConfig{
				servers: servers, port: port, etcdPort: etcdPort, data: data, token: token, secret: secret, log: log,
				noPresplit: !presplitOn, sealQuiet: sealQuiet, sealIdle: sealIdle, sealAfter: sealAfter, cacheSize: cacheSize, mem: mem,
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&servers, "servers", 3, "number of servers to start (a new table's replication factor defaults to min(3, servers))")
	f.IntVar(&port, "port", 8080, "HTTP port of the first server; the others take the next ports")
	f.IntVar(&etcdPort, "etcd-port", 2379, "client port of the embedded etcd")
	f.StringVar(&data, "data", "./tsdb-data", "directory for all data (etcd and each server)")
	f.StringVar(&tokenFile, "auth-token-file", "", "file holding a token the public API then requires (Bearer, Token, basic auth with the token as password, or ?p= on /write and /query)")
	f.StringVar(&secretFile, "cluster-secret-file", "", clusterSecretUsage+" (default: a random secret made at each start)")
	f.StringVar(&pprofAddr, "pprof-addr", "", pprofUsage)
	f.Var(bytesize.Var(&cacheSize), "cache-size", "block cache of each server's partition store, such as 256MiB; it takes memory as it fills (0: an eighth of the memory available, the machine's or its control group's, within 128MiB-4GiB, shared by the servers)")
	f.DurationVar(&sealQuiet, "seal-quiet", node.DefaultSealQuiet, sealQuietUsage)
	f.DurationVar(&sealIdle, "seal-idle", node.DefaultSealIdle, sealIdleUsage)
	f.DurationVar(&sealAfter, "seal-after", node.DefaultSealAfter, sealAfterUsage)
	mem.register(f)
	f.BoolVar(&presplitOn, "presplit", true, "let the master pre-split every table's future, and create new tables already pre-split (false: one partition, only size splits)")
	logs.register(f)
	return cmd
}

type devConfig struct {
	servers, port, etcdPort int
	data, token, secret     string
	log                     *slog.Logger
	// noPresplit turns the master's pre-split off (and new tables are
	// born with one partition).
	noPresplit bool
	// sealQuiet, sealIdle and sealAfter are --seal-quiet, --seal-idle
	// and --seal-after (0 or less: never).
	sealQuiet, sealIdle, sealAfter time.Duration
	// cacheSize is --cache-size, each server's block cache (0: shared
	// out of node.AutoCacheSize's eighth of the memory).
	cacheSize int64
	// mem is --memory-head and --memory-head-bytes.
	mem memHeadFlags
}

// nodeConfig returns the configuration of the dev cluster's i-th server
// (0-based), whose id is s<i+1>.
func (c devConfig) nodeConfig(i int, etcdEndpoint string) node.Config {
	id := fmt.Sprintf("s%d", i+1)
	cfg := node.Config{
		ID:              id,
		Listen:          fmt.Sprintf("127.0.0.1:%d", c.port+i),
		DataDir:         filepath.Join(c.data, id),
		EtcdEndpoints:   []string{etcdEndpoint},
		AuthToken:       c.token,
		ClusterSecret:   c.secret,
		MaxBodyBytes:    tsdbhttp.DefaultMaxBodyBytes,
		Logger:          c.log,
		HTTP:            newHTTPServer,
		NoPresplit:      c.noPresplit,
		SealQuiet:       orNever(c.sealQuiet),
		SealIdle:        orNever(c.sealIdle),
		SealAfter:       orNever(c.sealAfter),
		CacheSize:       c.cacheSize,
		NoMemoryHead:    !c.mem.on,
		MemoryHeadBytes: c.mem.bytes,
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = node.AutoCacheSize(c.servers)
	}
	return cfg
}

func runDev(ctx context.Context, out io.Writer, c devConfig) (err error) {
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", c.data, err)
	}
	etcd, err := embedetcd.Start(embedetcd.Config{Dir: filepath.Join(c.data, "etcd"), ClientPort: c.etcdPort})
	if err != nil {
		return fmt.Errorf("start embedded etcd on port %d: %w (is another etcd or 'tsdb dev' running?)", c.etcdPort, err)
	}
	defer etcd.Close()
	var nodes []*node.Node
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var errs []error
		for i := len(nodes) - 1; i >= 0; i-- {
			errs = append(errs, nodes[i].Stop(sctx))
		}
		err = errors.Join(append([]error{err}, errs...)...)
	}()
	for i := 0; i < c.servers; i++ {
		cfg := c.nodeConfig(i, etcd.Endpoint())
		n, err := node.Start(ctx, cfg)
		if err != nil {
			return fmt.Errorf("start server %s: %w", cfg.ID, err)
		}
		nodes = append(nodes, n)
	}
	printDevBanner(out, etcd.Endpoint(), nodes, c)
	<-ctx.Done()
	fmt.Fprintln(out, "\nstopping...")
	return nil
}

func printDevBanner(out io.Writer, etcdURL string, nodes []*node.Node, c devConfig) {
	fmt.Fprintf(out, "tsdb dev: embedded etcd at %s (data under %s)\n", etcdURL, c.data)
	for _, n := range nodes {
		fmt.Fprintf(out, "  server %-4s %s\n", n.ID(), n.URL())
	}
	u := nodes[0].URL()
	auth, adminAuth := "", ""
	if c.token != "" {
		auth = ` -H "Authorization: Bearer $(cat TOKEN_FILE)"`
		adminAuth = " --auth-token-file TOKEN_FILE"
	}
	fmt.Fprintf(out, `
Try it (in another terminal):
  curl -s%[2]s -X POST %[1]s/api/v1/tables -d '{"name":"metrics"}'
  curl -s%[2]s -X POST '%[1]s/write?db=metrics' --data-binary 'cpu,host=a,region=eu usage=12.5,idle=80i'
  curl -s%[2]s -X POST %[1]s/api/v1/tables/metrics/insert -H 'Content-Type: application/json' \
       -d '[{"time":"2026-01-01T00:00:00Z","series":"cpu,host=b","fields":{"usage":3.5}}]'
  curl -s%[2]s '%[1]s/api/v1/tables/metrics/query?series=cpu*'
  curl -s%[2]s '%[1]s/api/v1/tables/metrics/query?agg=avg&fields=usage&group=none'
  curl -s%[2]s -G '%[1]s/query' --data-urlencode db=metrics \
       --data-urlencode 'q=SELECT mean(usage) FROM cpu WHERE time > now() - 1h GROUP BY time(1m), host'
  ./bin/tsdb admin metadata metrics --server %[1]s%[4]s
  ./bin/etcdctl --endpoints=%[3]s get --prefix /tsdb/tables/   # after 'make etcdctl'
Press Ctrl-C to stop.
`, u, auth, etcdURL, adminAuth)
}
