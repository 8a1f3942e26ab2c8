package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/internal/nodehttp"
	"github.com/tsdb/tsdb/node"
	"github.com/tsdb/tsdb/presplit"
)

func newServerCmd() *cobra.Command {
	var (
		id, listen, advertise, data, etcd, prefix, tokenFile, secretFile string
		maxBody, minServers, rebalanceMoves                              int
		deadAfter, presplitEvery                                         time.Duration
		ps                                                               presplit.Config
		presplitOn, rebalanceOn, smearOn                                 bool
		writeLimit, smearMaxBytes                                        int64
		logs                                                             logFlags
		limits                                                           limitFlags
		tlsf                                                             tlsFlags
	)
	cmd := &cobra.Command{
		Use:   "server --id ID --listen ADDR --data DIR --etcd URLS",
		Short: "Run one tsdb server",
		Long: `Run one tsdb server. It stores the partition replicas assigned to it in a
pebble database under --data, keeps its tables' METADATA files there too, and
serves the HTTP API on --listen. etcd (--etcd) holds the TableConfigs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return fmt.Errorf("--id is required")
			}
			if data == "" {
				return fmt.Errorf("--data is required")
			}
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return fmt.Errorf("--listen %q: want host:port", listen)
			}
			if advertise != "" {
				if _, _, err := net.SplitHostPort(advertise); err != nil {
					return fmt.Errorf("--advertise %q: want host:port", advertise)
				}
			}
			if deadAfter < time.Second {
				return fmt.Errorf("--dead-after %v: want at least 1s", deadAfter)
			}
			if writeLimit < 0 || smearMaxBytes < 0 {
				return fmt.Errorf("--write-limit %d, --smear-queue-max-bytes %d: want 0 or more", writeLimit, smearMaxBytes)
			}
			if minServers < 1 || rebalanceMoves < 1 {
				return fmt.Errorf("--min-servers %d, --rebalance-moves %d: want at least 1", minServers, rebalanceMoves)
			}
			if presplitEvery < 100*time.Millisecond {
				return fmt.Errorf("--presplit-interval %v: want at least 100ms", presplitEvery)
			}
			ps.Refill = 0 // half of the horizon given
			ps.EnsureDefaults()
			if err := ps.Validate(); err != nil {
				return fmt.Errorf("--presplit-*: %w", err)
			}
			if err := limits.validate(); err != nil {
				return err
			}
			if maxBody < 1024 {
				return fmt.Errorf("--max-body-bytes %d: want at least 1024", maxBody)
			}
			endpoints := splitList(etcd)
			if len(endpoints) == 0 {
				return fmt.Errorf("--etcd: at least one URL is required")
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
			if token != "" && secret == "" {
				return fmt.Errorf("--auth-token-file without --cluster-secret-file: the internal API (/internal/...) " +
					"would be open to anyone who can reach --listen, a way around the bearer token; " +
					"give every server the same --cluster-secret-file")
			}
			cfg := node.Config{
				ID: id, Listen: listen, Advertise: advertise, DataDir: data, EtcdEndpoints: endpoints, EtcdPrefix: prefix,
				AuthToken: token, ClusterSecret: secret, MaxBodyBytes: maxBody, Logger: log,
				DeadAfter: deadAfter, MinServers: minServers, RebalanceMoves: rebalanceMoves,
				PresplitInterval: presplitEvery, Presplit: ps, NoPresplit: !presplitOn, NoRebalance: !rebalanceOn,
				NoSmear: !smearOn, WriteLimit: writeLimit, SmearMaxBytes: smearMaxBytes,
				MaxConcurrentRequests: limits.concurrent, MaxQueryBuckets: limits.buckets, MaxSubQueryBytes: limits.subQueryBytes,
				HTTP: nodehttp.New,
			}
			if err := tlsf.apply(&cfg); err != nil {
				return err
			}
			n, err := node.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tsdb server %s listening on %s\n", id, n.URL())
			<-cmd.Context().Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return n.Stop(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "server id, unique in the cluster and stable across restarts (required)")
	f.StringVar(&listen, "listen", "127.0.0.1:8080", "HTTP listen address host:port")
	f.StringVar(&advertise, "advertise", "", "address other servers reach this one at, host:port (default: the listen address; a wildcard host is replaced by the hostname)")
	f.StringVar(&data, "data", "", "data directory (required)")
	f.StringVar(&etcd, "etcd", "http://127.0.0.1:2379", "comma-separated etcd client URLs")
	f.StringVar(&prefix, "etcd-prefix", "/tsdb/", "prefix of every etcd key")
	f.StringVar(&tokenFile, "auth-token-file", "", "file holding a bearer token the public API then requires (not on /healthz and /metrics)")
	f.StringVar(&secretFile, "cluster-secret-file", "", clusterSecretUsage+"; required with --auth-token-file")
	f.IntVar(&maxBody, "max-body-bytes", tsdbhttp.DefaultMaxBodyBytes, "largest request body accepted, as sent and decompressed (413 above)")
	f.DurationVar(&deadAfter, "dead-after", 30*time.Second, "how long a server may be gone from the membership list before the master replaces it in its partitions")
	f.IntVar(&minServers, "min-servers", 1, "live servers the cluster needs before the master assigns anything (replacements, moves, pre-splits) and tables can be created")
	f.IntVar(&rebalanceMoves, "rebalance-moves", 2, "partition moves a rebalance (on a server's join or 'tsdb admin rebalance') has in flight at once")
	f.BoolVar(&smearOn, "smear", true, "smear inserts aimed at a narrow partition over the table's max delay (tables and the X-TSDB-Smear: off header can opt out)")
	f.Int64Var(&smearMaxBytes, "smear-queue-max-bytes", 0, "bound of the smear queue in bytes; a full queue answers 503 with Retry-After (0: 1 GiB)")
	f.Int64Var(&writeLimit, "write-limit", 0, "bytes per second this server may write to its stores, smear queue included, standing in for a disk's bandwidth (0: no limit)")
	f.BoolVar(&rebalanceOn, "rebalance", true, "let the master rebalance partitions when a server joins (false: only drains and repairs move them)")
	f.BoolVar(&presplitOn, "presplit", true, "let the master pre-split every table's future (false: only size splits)")
	ps = presplit.DefaultConfig()
	f.DurationVar(&ps.Horizon, "presplit-horizon", ps.Horizon, "how far past now the master keeps every table pre-split (at least 3 partitions ahead)")
	f.DurationVar(&ps.MinWidth, "presplit-min-width", ps.MinWidth, "narrowest partition a pre-split makes")
	f.DurationVar(&ps.MaxWidth, "presplit-max-width", ps.MaxWidth, "widest partition a pre-split makes (and the width for an idle table)")
	f.DurationVar(&presplitEvery, "presplit-interval", 10*time.Second, "how often the master measures recent partitions and pre-splits")
	limits.register(f)
	tlsf.register(f)
	logs.register(f)
	return cmd
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
