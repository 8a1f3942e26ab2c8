package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/internal/bytesize"
	"github.com/tsdb/tsdb/node"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/presplit"
)

// serverFlags are the flags of tsdb server.
type serverFlags struct {
	id, listen, advertise, data, etcd, prefix, tokenFile, secretFile string
	pprofAddr                                                        string
	maxBody, minServers, rebalanceMoves, replicationQuota            int
	deadAfter, presplitEvery, sealAfter, sealQuiet, sealIdle         time.Duration
	ps                                                               presplit.Config
	presplitOn, rebalanceOn, smearOn, smearAdmission, checkIndex     bool
	mem                                                              memHeadFlags
	writeLimit, smearMaxBytes, cacheSize                             int64
	logs                                                             logFlags
	limits                                                           limitFlags
	tlsf                                                             tlsFlags
}

const serverLong = `Run one tsdb server. It stores the partition replicas assigned to it in a
pebble database under --data, keeps its tables' METADATA files there too, and
serves the HTTP API on --listen. etcd (--etcd) holds the TableConfigs.

Sizes (type "size") take a number of bytes or a unit: 250MB, 1.5GB (powers
of 1000), 64KiB, 4MiB (powers of 1024).`

func newServerCmd() *cobra.Command {
	var s serverFlags
	return s.command()
}

// command returns the tsdb server command over s.
func (s *serverFlags) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server --id ID --listen ADDR --data DIR --etcd URLS",
		Short: "Run one tsdb server",
		Long:  serverLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return s.run(cmd) },
	}
	f := cmd.Flags()
	s.registerServer(f)
	s.registerCluster(f)
	s.registerPresplit(f)
	s.limits.register(f)
	s.tlsf.register(f)
	s.logs.register(f)
	return cmd
}

// registerServer registers the flags of this server alone: identity,
// addresses, storage, security and its write bounds.
func (s *serverFlags) registerServer(f *pflag.FlagSet) {
	f.StringVar(&s.id, "id", "", "server id, unique in the cluster and stable across restarts (required)")
	f.StringVar(&s.listen, "listen", "127.0.0.1:8080", "HTTP listen address host:port")
	f.StringVar(&s.advertise, "advertise", "", "address other servers reach this one at, host:port (default: the listen address; a wildcard host is replaced by the hostname)")
	f.StringVar(&s.data, "data", "", "data directory (required)")
	f.StringVar(&s.tokenFile, "auth-token-file", "", "file holding a token the public API then requires, as \"Authorization: Bearer|Token <token>\", basic auth (any user, the token as password) or ?p=<token> on /write and /query (not on /healthz, /metrics, /ping and /health)")
	f.StringVar(&s.secretFile, "cluster-secret-file", "", clusterSecretUsage+"; required with --auth-token-file")
	s.maxBody = tsdbhttp.DefaultMaxBodyBytes
	f.Var(bytesize.Var(&s.maxBody), "max-body-bytes", "largest request body accepted, as sent and decompressed (413 above)")
	f.BoolVar(&s.smearOn, "smear", true, "smear inserts aimed at a narrow partition over the table's max delay (tables and the X-TSDB-Smear: off header can opt out)")
	f.BoolVar(&s.smearAdmission, "smear-admission", true, "refuse new smeared inserts with 503 queue_full and Retry-After while this server's smear forwarder is behind (rows overdue by more than 2 s while the queue takes rows faster than it forwards them, for 3 s), until the overdue rows are forwarded; keeps smeared rows visible within max_delay + 5 s")
	f.Var(bytesize.Var(&s.cacheSize), "cache-size", cacheSizeUsage)
	f.Var(bytesize.Var(&s.smearMaxBytes), "smear-queue-max-bytes", "bound of the smear queue; a full queue answers 503 with Retry-After (0: 1 GiB)")
	f.StringVar(&s.pprofAddr, "pprof-addr", "", pprofUsage)
	f.BoolVar(&s.checkIndex, "check-index", false, "at start-up, compare every local replica's tag index (InfluxQL's SHOW statements and tag filters) with its rows and repair what differs")
	f.DurationVar(&s.sealQuiet, "seal-quiet", node.DefaultSealQuiet, sealQuietUsage)
	f.DurationVar(&s.sealIdle, "seal-idle", node.DefaultSealIdle, sealIdleUsage)
	f.DurationVar(&s.sealAfter, "seal-after", node.DefaultSealAfter, sealAfterUsage)
	s.mem.register(f)
	f.IntVar(&s.replicationQuota, "replication-quota", 0, "rows a partition's slowest copy that keeps up may lag behind the replica that coordinates its inserts before new inserts there wait for it (up to half the ack timeout, then 503 unavailable with nothing written), e.g. 32768; a copy that is down, stalled or catching up is not waited for (0: no quota; docs/replication.md)")
	f.Var(bytesize.Var(&s.writeLimit), "write-limit", "bytes per second this server may write to its stores, smear queue included, standing in for a disk's bandwidth, e.g. 250MB (0: no limit)")
}

// registerCluster registers the flags of the cluster this server joins:
// etcd, membership and the master's moves.
func (s *serverFlags) registerCluster(f *pflag.FlagSet) {
	f.StringVar(&s.etcd, "etcd", "http://127.0.0.1:2379", "comma-separated etcd client URLs")
	f.StringVar(&s.prefix, "etcd-prefix", "/tsdb/", "prefix of every etcd key")
	f.DurationVar(&s.deadAfter, "dead-after", 30*time.Second, "how long a server may be gone from the membership list before the master replaces it in its partitions")
	f.IntVar(&s.minServers, "min-servers", 1, "live servers the cluster needs before the master assigns anything (replacements, moves, pre-splits) and tables can be created")
	f.IntVar(&s.rebalanceMoves, "rebalance-moves", 2, "partition moves a rebalance (on a server's join or 'tsdb admin rebalance') has in flight at once")
	f.BoolVar(&s.rebalanceOn, "rebalance", true, "let the master rebalance partitions when a server joins (false: only drains and repairs move them)")
}

// registerPresplit registers the flags of the master's pre-split.
func (s *serverFlags) registerPresplit(f *pflag.FlagSet) {
	f.BoolVar(&s.presplitOn, "presplit", true, "let the master pre-split every table's future, and create new tables already pre-split (false: one partition, only size splits)")
	s.ps = presplit.DefaultConfig()
	f.DurationVar(&s.ps.Horizon, "presplit-horizon", s.ps.Horizon, "how far past now the master keeps every table pre-split (at least 3 partitions ahead)")
	f.DurationVar(&s.ps.MinWidth, "presplit-min-width", s.ps.MinWidth, "narrowest partition a pre-split makes")
	f.DurationVar(&s.ps.MaxWidth, "presplit-max-width", s.ps.MaxWidth, "widest partition a pre-split makes (and the width for an idle table)")
	f.DurationVar(&s.presplitEvery, "presplit-interval", 10*time.Second, "how often the master measures recent partitions and pre-splits")
}

// validate refuses flag values the server cannot run with.
func (s *serverFlags) validate() error {
	if s.id == "" {
		return fmt.Errorf("--id is required")
	}
	if s.data == "" {
		return fmt.Errorf("--data is required")
	}
	if _, _, err := net.SplitHostPort(s.listen); err != nil {
		return fmt.Errorf("--listen %q: want host:port", s.listen)
	}
	if s.advertise != "" {
		if _, _, err := net.SplitHostPort(s.advertise); err != nil {
			return fmt.Errorf("--advertise %q: want host:port", s.advertise)
		}
	}
	if s.deadAfter < time.Second {
		return fmt.Errorf("--dead-after %v: want at least 1s", s.deadAfter)
	}
	if s.replicationQuota < 0 {
		return fmt.Errorf("--replication-quota %d: want 0 (off) or more rows", s.replicationQuota)
	}
	if s.writeLimit < 0 || s.smearMaxBytes < 0 {
		return fmt.Errorf("--write-limit %d, --smear-queue-max-bytes %d: want 0 or more", s.writeLimit, s.smearMaxBytes)
	}
	if s.minServers < 1 || s.rebalanceMoves < 1 {
		return fmt.Errorf("--min-servers %d, --rebalance-moves %d: want at least 1", s.minServers, s.rebalanceMoves)
	}
	if s.presplitEvery < 100*time.Millisecond {
		return fmt.Errorf("--presplit-interval %v: want at least 100ms", s.presplitEvery)
	}
	s.ps.Refill = 0 // half of the horizon given
	s.ps.EnsureDefaults()
	if err := s.ps.Validate(); err != nil {
		return fmt.Errorf("--presplit-*: %w", err)
	}
	if err := s.limits.validate(); err != nil {
		return err
	}
	if s.maxBody < 1024 {
		return fmt.Errorf("--max-body-bytes %d: want at least 1024", s.maxBody)
	}
	return nil
}

// config validates the flags, reads the files they name and returns the
// node's configuration.
func (s *serverFlags) config() (node.Config, error) {
	if err := s.validate(); err != nil {
		return node.Config{}, err
	}
	endpoints := splitList(s.etcd)
	if len(endpoints) == 0 {
		return node.Config{}, fmt.Errorf("--etcd: at least one URL is required")
	}
	log, err := s.logs.logger()
	if err != nil {
		return node.Config{}, err
	}
	token, err := readSecretFile("auth-token-file", s.tokenFile)
	if err != nil {
		return node.Config{}, err
	}
	secret, err := readSecretFile("cluster-secret-file", s.secretFile)
	if err != nil {
		return node.Config{}, err
	}
	if token != "" && secret == "" {
		return node.Config{}, fmt.Errorf("--auth-token-file without --cluster-secret-file: the internal API (/internal/...) " +
			"would be open to anyone who can reach --listen, a way around the bearer token; " +
			"give every server the same --cluster-secret-file")
	}
	cfg := node.Config{
		ID: s.id, Listen: s.listen, Advertise: s.advertise, DataDir: s.data, EtcdEndpoints: endpoints, EtcdPrefix: s.prefix,
		AuthToken: token, ClusterSecret: secret, MaxBodyBytes: s.maxBody, Logger: log,
		DeadAfter: s.deadAfter, MinServers: s.minServers, RebalanceMoves: s.rebalanceMoves,
		PresplitInterval: s.presplitEvery, Presplit: s.ps, NoPresplit: !s.presplitOn, NoRebalance: !s.rebalanceOn,
		NoSmear: !s.smearOn, NoSmearAdmission: !s.smearAdmission, WriteLimit: s.writeLimit, CheckIndex: s.checkIndex, SmearMaxBytes: s.smearMaxBytes,
		SealAfter: orNever(s.sealAfter), SealQuiet: orNever(s.sealQuiet), SealIdle: orNever(s.sealIdle), CacheSize: s.cacheSize,
		ReplicationQuota: s.replicationQuota,
		NoMemoryHead:     !s.mem.on, MemoryHeadBytes: s.mem.bytes,
		MaxConcurrentRequests: s.limits.concurrent, MaxQueryBuckets: s.limits.buckets, MaxSubQueryBytes: s.limits.subQueryBytes,
		HTTP: newHTTPServer,
	}
	if err := s.tlsf.apply(&cfg); err != nil {
		return node.Config{}, err
	}
	return cfg, nil
}

// The usage of flags server and dev share.
const (
	cacheSizeUsage = "block cache of the partition store, such as 512MiB; it takes memory as it fills (0: an eighth of the memory available, the machine's or its control group's, within 128MiB-4GiB)"
	sealQuietUsage = "seal the rows of a storage bucket (68.7 s of row time) into compressed column blocks once it has ended and taken no write for this long (0 or less: only --seal-after)"
	sealIdleUsage  = "seal an ended storage bucket sooner than --seal-quiet once its partition has taken no write at all for this long, so that the seal after a burst of writes is done before the reads that follow it (0 or less: --seal-quiet alone)"
	sealAfterUsage = "seal a storage bucket this long after its end even if it never goes quiet; keep it above your tables' smear max_delay (0 or less: never seal)"
)

// memHeadFlags are --memory-head and --memory-head-bytes, shared by tsdb
// server and tsdb dev.
type memHeadFlags struct {
	on    bool
	bytes int64
}

func (m *memHeadFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&m.on, "memory-head", true, "keep the rows of storage buckets not sealed yet in memory, their inserts' log records being their durable form (replayed at start-up), instead of one pebble key per row (false: as before; a store is converted at its next start either way)")
	m.bytes = partition.DefaultMemoryHeadBytes
	f.Var(bytesize.Var(&m.bytes), "memory-head-bytes", "memory the memory head of this server's store may hold; past it the oldest bucket in memory is sealed into blocks early (written to pebble as rows when it has not ended yet)")
}

// orNever maps --seal-after and --seal-quiet to node.Config: 0 or less is
// never (-1), since the node reads 0 as its default.
func orNever(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// run starts the server and stops it when the command's context ends.
func (s *serverFlags) run(cmd *cobra.Command) error {
	cfg, err := s.config()
	if err != nil {
		return err
	}
	stopPprof, err := startPprof(cmd.Context(), s.pprofAddr, cfg.Logger)
	if err != nil {
		return err
	}
	defer stopPprof()
	n, err := node.Start(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "tsdb server %s listening on %s\n", s.id, n.URL())
	<-cmd.Context().Done()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.Stop(ctx)
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
