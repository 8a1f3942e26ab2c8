package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/tsdb/tsdb/internal/backoff"
)

// Peers is how a Committer reaches the other metadata servers of a table
// (the internal HTTP API in production). The Committer calls it
// concurrently.
type Peers interface {
	// StoreFile stores the encoded file of (table, txnID) on serverID and
	// returns nil only once it is durable there. The receiver checks the
	// bytes with CheckEncoded and stores them with FileStore.Put, so a
	// repeated store of the same bytes succeeds and different bytes fail
	// (ErrTxnMismatch). It must return promptly once ctx is cancelled: the
	// Committer cancels the stores still running after a majority answered
	// and waits for them to return.
	StoreFile(ctx context.Context, serverID, table, txnID string, encoded []byte) error
	// FetchFile returns the encoded file of (table, txnID) as stored on
	// serverID: its local copy only (the serving side answers with
	// Committer.LocalFile), so two servers that both lack a file never ask
	// each other in a loop. An error wrapping ErrFileNotFound means serverID
	// does not hold it. The answer is NOT trusted: callers verify it
	// (VerifyFile) before they use or store it. It must return promptly
	// once ctx is cancelled.
	FetchFile(ctx context.Context, serverID, table, txnID string) ([]byte, error)
}

// Defaults of the Committer's timing knobs.
const (
	DefaultStragglerWait  = 100 * time.Millisecond
	DefaultResolveTimeout = 10 * time.Second
	// DefaultFetchTimeout bounds one fetch of a file from one peer.
	DefaultFetchTimeout = 5 * time.Second
	// DefaultListChangeAttempts bounds the read → CAS rounds of
	// JoinMetadataServer and RemoveMetadataServer.
	DefaultListChangeAttempts = 20
)

// Committer runs the commit step of a METADATA transaction on the
// coordinating metadata server Self (DESIGN.md section 4):
//
//	apply op (pure) → store locally → store on peers → wait for a majority
//	→ CAS TableConfig → after any CAS error re-read TableConfig to learn the
//	outcome → if it does not name the new txnid, ErrConflict.
//
// It never deletes a file: a file whose commit lost stays until
// FileStore.Sweep removes it. A Committer holds no state of its own and is
// safe for concurrent use; concurrent changes of one table are serialized
// by the CAS, and the losers get ErrConflict.
//
// A server that lacks a file it needs (the current file for Load and
// Current, the base of a Change) fetches it from the table's other metadata
// servers through Peers, verifies it against TableConfig, and, if it is a
// metadata server of the table, stores it before it answers (fetch.go).
// Metadata servers join and leave a table's list with JoinMetadataServer
// and RemoveMetadataServer (servers.go).
type Committer struct {
	// Store holds the TableConfigs.
	Store Store
	// Files is this server's file store.
	Files *FileStore
	// Peers reaches the other metadata servers, to store new files and
	// fetch missing ones; nil when Self is alone (then a missing file is
	// simply ErrFileNotFound).
	Peers Peers
	// Self is this server's id.
	Self string
	// Logger receives commit events; nil discards them.
	Logger *slog.Logger
	// StragglerWait is how long, once a majority holds the new file, the
	// commit keeps waiting for the other metadata servers before it cancels
	// their stores and goes on (they catch up by fetching). 0 means
	// DefaultStragglerWait; negative means do not wait.
	StragglerWait time.Duration
	// ResolveTimeout bounds the re-reads that learn a commit's outcome after
	// a failed CAS; they run even if the caller's ctx has expired. 0 means
	// DefaultResolveTimeout.
	ResolveTimeout time.Duration
	// FetchTimeout bounds each fetch of a missing file from one peer. 0
	// means DefaultFetchTimeout.
	FetchTimeout time.Duration
	// ListChangeAttempts bounds the read → CAS rounds of JoinMetadataServer
	// and RemoveMetadataServer. 0 means DefaultListChangeAttempts.
	ListChangeAttempts int
	// BeforeCAS is a fault-injection hook for tests; production leaves it
	// nil. Create and Change call it after the new file is stored on a
	// majority and before the CAS of TableConfig. A non-nil error aborts
	// the commit with that error wrapped, as if the coordinator died there:
	// nothing is committed, and the stored files stay as orphans for the
	// sweep.
	BeforeCAS func(table, txnID string) error
}

func (c *Committer) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c *Committer) check() error {
	if c.Store == nil || c.Files == nil || c.Self == "" {
		return errors.New("metadata: committer needs Store, Files and Self")
	}
	return nil
}

// Create creates a table: it applies CREATE with a fresh txnid, stores the
// file on a majority of cfg.MetadataServers (which must include Self), and
// creates the TableConfig with metadata_txnid, metadata_txnseq (1) and
// metadata_checksum filled in (and CreatedAt, if zero). cfg must be valid,
// with defaults already applied, and op.Servers must hold exactly
// ReplicationFactor servers. It fails with ErrTableExists if the name is
// taken; the file it stored then stays as an orphan for the sweep.
func (c *Committer) Create(ctx context.Context, cfg TableConfig, op CreateOp) (TableConfig, *File, error) {
	if err := c.checkCreate(cfg, op); err != nil {
		return TableConfig{}, nil, err
	}
	txnID := NewTxnID()
	f, err := Apply(nil, txnID, Op{Type: OpCreate, Create: &op})
	if err != nil {
		return TableConfig{}, nil, err
	}
	enc, err := Encode(f)
	if err != nil {
		return TableConfig{}, nil, err
	}
	if err := c.storeOnMajority(ctx, cfg.MetadataServers, cfg.Name, txnID, enc); err != nil {
		return TableConfig{}, nil, err
	}
	if err := c.beforeCAS(cfg.Name, txnID); err != nil {
		return TableConfig{}, nil, err
	}
	cfg.MetadataServers = slices.Clone(cfg.MetadataServers)
	cfg.MetadataTxnID, cfg.MetadataTxnSeq, cfg.MetadataChecksum = txnID, f.TxnSeq, Checksum(enc)
	if cfg.CreatedAt.IsZero() {
		cfg.CreatedAt = time.Now().UTC()
	}
	if err := c.Store.CreateTable(ctx, cfg); err != nil {
		if err := c.resolveCreate(ctx, cfg, err); err != nil {
			return TableConfig{}, nil, err
		}
	}
	c.logger().Info("metadata: table created", "table", cfg.Name, "txnid", txnID, "metadata_servers", cfg.MetadataServers)
	return cfg, f, nil
}

func (c *Committer) checkCreate(cfg TableConfig, op CreateOp) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if len(cfg.MetadataServers) == 0 {
		return fmt.Errorf("%w: metadata_servers: empty", ErrInvalidConfig)
	}
	if !slices.Contains(cfg.MetadataServers, c.Self) {
		return fmt.Errorf("%w: %q is not in metadata_servers %v of %q", ErrNotMetadataServer, c.Self, cfg.MetadataServers, cfg.Name)
	}
	if op.Table != cfg.Name {
		return fmt.Errorf("%w: CREATE names table %q, the config %q", ErrInvalidOp, op.Table, cfg.Name)
	}
	if len(op.Servers) != cfg.ReplicationFactor {
		return fmt.Errorf("%w: CREATE lists %d servers for replication factor %d", ErrInvalidOp, len(op.Servers), cfg.ReplicationFactor)
	}
	for i, c := range op.Rest {
		if len(c.Servers) != cfg.ReplicationFactor {
			return fmt.Errorf("%w: CREATE lists %d servers for partition %d, replication factor %d", ErrInvalidOp, len(c.Servers), i+1, cfg.ReplicationFactor)
		}
	}
	return nil
}

// Change commits op on top of baseTxnID as newTxnID (a fresh NewTxnID chosen
// by the requester, so a retried request is recognised). It fails with
// ErrConflict when baseTxnID is not the current transaction or another
// commit wins the CAS; if newTxnID is already the current one (a retry of a
// request that committed), it returns that file. A base file missing from
// Files is fetched from the other metadata servers, verified and stored.
// After a CAS error or timeout it re-reads TableConfig: if it names
// newTxnID, the change is committed.
func (c *Committer) Change(ctx context.Context, table, baseTxnID, newTxnID string, op Op) (*File, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if !ValidTxnID(newTxnID) || newTxnID == baseTxnID {
		return nil, fmt.Errorf("%w: new txnid %q must be 40 lowercase hex characters and differ from the base", ErrInvalidOp, newTxnID)
	}
	cfg, rev, err := c.Store.GetTable(ctx, table)
	if err != nil {
		return nil, err
	}
	if cfg.MetadataTxnID == newTxnID {
		return c.alreadyCommitted(ctx, cfg, baseTxnID, op)
	}
	if cfg.MetadataTxnID != baseTxnID {
		return nil, fmt.Errorf("%w: %q: base %s is not the current txn %s (txnseq %d)", ErrConflict, table, baseTxnID, cfg.MetadataTxnID, cfg.MetadataTxnSeq)
	}
	if !slices.Contains(cfg.MetadataServers, c.Self) {
		return nil, fmt.Errorf("%w: %q is not in metadata_servers %v of %q", ErrNotMetadataServer, c.Self, cfg.MetadataServers, table)
	}
	next, enc, err := c.applyOnCurrent(ctx, cfg, newTxnID, op)
	if err != nil {
		return nil, err
	}
	if err := c.storeOnMajority(ctx, cfg.MetadataServers, table, newTxnID, enc); err != nil {
		return nil, err
	}
	if err := c.beforeCAS(table, newTxnID); err != nil {
		return nil, err
	}
	newCfg := cfg
	newCfg.MetadataTxnID, newCfg.MetadataTxnSeq, newCfg.MetadataChecksum = newTxnID, next.TxnSeq, Checksum(enc)
	if err := c.Store.UpdateTable(ctx, newCfg, rev); err != nil {
		if err := c.resolveChange(ctx, newCfg, rev, err); err != nil {
			return nil, err
		}
	}
	c.logger().Info("metadata: change committed", "table", table, "op", op.Type, "txnid", newTxnID, "txnseq", next.TxnSeq)
	return next, nil
}

// applyOnCurrent loads the current file named by cfg (fetching and storing
// it if this server lacks it), applies op and encodes the result.
func (c *Committer) applyOnCurrent(ctx context.Context, cfg TableConfig, newTxnID string, op Op) (*File, []byte, error) {
	base, _, err := c.currentFile(ctx, cfg, true)
	if err != nil {
		return nil, nil, err
	}
	next, err := Apply(base, newTxnID, op)
	if err != nil {
		return nil, nil, err
	}
	enc, err := Encode(next)
	if err != nil {
		return nil, nil, err
	}
	return next, enc, nil
}

// alreadyCommitted answers a retried Change whose newTxnID is already
// current. It returns the committed file from Files; else it rebuilds it
// from the local base (ops are deterministic) and checks it against the
// recorded checksum, which also proves the retry carries the same op; else
// it fetches the committed file from the other metadata servers (verified)
// and checks that its parent is baseTxnID.
func (c *Committer) alreadyCommitted(ctx context.Context, cfg TableConfig, baseTxnID string, op Op) (*File, error) {
	f, err := c.loadFile(cfg)
	if !errors.Is(err, ErrFileNotFound) {
		return f, err
	}
	b, err := c.Files.Get(cfg.Name, baseTxnID)
	if errors.Is(err, ErrFileNotFound) {
		return c.fetchCommitted(ctx, cfg, baseTxnID)
	}
	if err != nil {
		return nil, err
	}
	base, err := CheckEncoded(cfg.Name, baseTxnID, b)
	if err != nil {
		return nil, err
	}
	next, err := Apply(base, cfg.MetadataTxnID, op)
	if err != nil {
		return nil, err
	}
	enc, err := Encode(next)
	if err != nil {
		return nil, err
	}
	if Checksum(enc) != cfg.MetadataChecksum {
		return nil, fmt.Errorf("%w: rebuilt %s/%s does not match the committed file", ErrChecksum, cfg.Name, cfg.MetadataTxnID)
	}
	if c.isMetadataServer(cfg) {
		if err := c.Files.Put(cfg.Name, cfg.MetadataTxnID, enc); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// fetchCommitted fetches the committed file cfg names for a retried Change
// when neither it nor its base is stored here, and checks that it was built
// on baseTxnID. Without the base the op itself cannot be compared.
func (c *Committer) fetchCommitted(ctx context.Context, cfg TableConfig, baseTxnID string) (*File, error) {
	f, _, err := c.currentFile(ctx, cfg, c.isMetadataServer(cfg))
	if err != nil {
		return nil, fmt.Errorf("txn %s is committed but neither it nor its base %s could be loaded: %w", cfg.MetadataTxnID, baseTxnID, err)
	}
	if f.ParentTxnID != baseTxnID {
		return nil, fmt.Errorf("%w: %q: txn %s is committed on base %s, not %s", ErrConflict, cfg.Name, cfg.MetadataTxnID, f.ParentTxnID, baseTxnID)
	}
	return f, nil
}

// Load returns the table's current config and its current file, verified
// against metadata_checksum. A file missing from Files is fetched from the
// table's other metadata servers (random order, each try bounded by
// FetchTimeout, the first verified copy wins) and, if Self is a metadata
// server of the table, stored durably before Load returns; a plain front
// end fetches without storing. An error wrapping ErrFileNotFound means no
// metadata server could supply a verified copy; it lists each one's error.
func (c *Committer) Load(ctx context.Context, table string) (TableConfig, *File, error) {
	if err := c.check(); err != nil {
		return TableConfig{}, nil, err
	}
	cfg, _, err := c.Store.GetTable(ctx, table)
	if err != nil {
		return TableConfig{}, nil, err
	}
	f, _, err := c.currentFile(ctx, cfg, c.isMetadataServer(cfg))
	if err != nil {
		return TableConfig{}, nil, err
	}
	return cfg, f, nil
}

// LoadFile returns the file cfg names, like Load but for a TableConfig the
// caller already holds (a watch event): no etcd read. The file comes from
// Files or, if missing, is fetched from cfg's metadata servers, verified, and
// kept when Self is one of them.
func (c *Committer) LoadFile(ctx context.Context, cfg TableConfig) (*File, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	f, _, err := c.currentFile(ctx, cfg, c.isMetadataServer(cfg))
	return f, err
}

// loadFile reads the file cfg names from Files and verifies it.
func (c *Committer) loadFile(cfg TableConfig) (*File, error) {
	b, err := c.Files.Get(cfg.Name, cfg.MetadataTxnID)
	if err != nil {
		return nil, err
	}
	return VerifyFile(cfg, b)
}

// VerifyFile checks that encoded is the file cfg names (its checksum is
// metadata_checksum, and its table, txnid and txnseq match) and decodes it.
func VerifyFile(cfg TableConfig, encoded []byte) (*File, error) {
	if sum := Checksum(encoded); sum != cfg.MetadataChecksum {
		return nil, fmt.Errorf("%w: %s/%s is %s, TableConfig records %s", ErrChecksum, cfg.Name, cfg.MetadataTxnID, sum, cfg.MetadataChecksum)
	}
	f, err := CheckEncoded(cfg.Name, cfg.MetadataTxnID, encoded)
	if err != nil {
		return nil, err
	}
	if f.TxnSeq != cfg.MetadataTxnSeq {
		return nil, fmt.Errorf("%w: %s/%s has txnseq %d, TableConfig records %d", ErrCorruptFile, cfg.Name, cfg.MetadataTxnID, f.TxnSeq, cfg.MetadataTxnSeq)
	}
	return f, nil
}

// storeOnMajority stores the file on Self (if Self is one of servers),
// then on the other servers in parallel, and returns once a majority of
// servers hold it. It fails with ErrNoQuorum, listing each peer's error, if
// that cannot happen. Peer stores still running after the majority get
// StragglerWait more, then are cancelled; none outlives the call.
func (c *Committer) storeOnMajority(ctx context.Context, servers []string, table, txnID string, enc []byte) error {
	need := len(servers)/2 + 1
	local := 0
	if slices.Contains(servers, c.Self) {
		if err := c.Files.Put(table, txnID, enc); err != nil {
			return fmt.Errorf("metadata: store %s/%s locally: %w", table, txnID, err)
		}
		local = 1
	}
	peers := slices.DeleteFunc(slices.Clone(servers), func(s string) bool { return s == c.Self })
	stored, errs := c.storeOnPeers(ctx, peers, need-local, table, txnID, enc)
	stored += local
	if stored < need {
		return fmt.Errorf("%w: %s/%s is on %d of %d metadata servers, %d needed: %w",
			ErrNoQuorum, table, txnID, stored, len(servers), need, errors.Join(errs...))
	}
	if len(errs) > 0 {
		c.logger().Warn("metadata: some metadata servers did not store the file",
			"table", table, "txnid", txnID, "stored", stored, "of", len(servers), "err", errors.Join(errs...))
	}
	return nil
}

type peerResult struct {
	id  string
	err error
}

// storeOnPeers sends the file to every peer and counts the successes until
// need of them succeeded (plus StragglerWait), every peer answered, success
// became impossible, or ctx ended. It cancels and waits for the stores still
// running before it returns.
func (c *Committer) storeOnPeers(ctx context.Context, peers []string, need int, table, txnID string, enc []byte) (int, []error) {
	if len(peers) == 0 {
		return 0, nil
	}
	pctx, cancel := context.WithCancel(ctx)
	results := make(chan peerResult, len(peers))
	var wg sync.WaitGroup
	for _, id := range peers {
		wg.Go(func() { results <- peerResult{id, c.storeOnPeer(pctx, id, table, txnID, enc)} })
	}
	stored, errs := c.collect(ctx, results, len(peers), need)
	cancel()
	wg.Wait()
	return stored, errs
}

func (c *Committer) storeOnPeer(ctx context.Context, id, table, txnID string, enc []byte) error {
	if c.Peers == nil {
		return errors.New("no peer transport")
	}
	return c.Peers.StoreFile(ctx, id, table, txnID, enc)
}

func (c *Committer) collect(ctx context.Context, results <-chan peerResult, pending, need int) (int, []error) {
	var (
		stored   int
		errs     []error
		straggle <-chan time.Time
	)
	for pending > 0 {
		select {
		case r := <-results:
			pending--
			if r.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.id, r.err))
			} else {
				stored++
			}
		case <-straggle:
			return stored, errs
		case <-ctx.Done():
			return stored, append(errs, ctx.Err())
		}
		if stored+pending < need {
			return stored, errs // a majority is out of reach
		}
		if stored >= need && straggle == nil && pending > 0 {
			wait := c.stragglerWait()
			if wait < 0 {
				return stored, errs
			}
			t := time.NewTimer(wait)
			defer t.Stop()
			straggle = t.C
		}
	}
	return stored, errs
}

// beforeCAS runs the BeforeCAS hook, if any.
func (c *Committer) beforeCAS(table, txnID string) error {
	if c.BeforeCAS == nil {
		return nil
	}
	if err := c.BeforeCAS(table, txnID); err != nil {
		return fmt.Errorf("metadata: %s/%s: aborted before the CAS: %w", table, txnID, err)
	}
	return nil
}

func (c *Committer) stragglerWait() time.Duration {
	if c.StragglerWait == 0 {
		return DefaultStragglerWait
	}
	return c.StragglerWait
}

// resolveContext bounds the outcome re-reads; it outlives an expired ctx,
// because a timeout is exactly when the outcome is unknown.
func (c *Committer) resolveContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.ResolveTimeout
	if d <= 0 {
		d = DefaultResolveTimeout
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// resolveCreate learns the outcome of a CreateTable that failed with
// casErr. The table is ours if it names our txnid; someone else's if it
// names another (ErrTableExists); if it is missing, the create is safely
// re-issued (the same txnid and value, so at most one can land).
func (c *Committer) resolveCreate(ctx context.Context, cfg TableConfig, casErr error) error {
	if errors.Is(casErr, ErrInvalidConfig) {
		return casErr
	}
	rctx, cancel := c.resolveContext(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		got, _, err := c.Store.GetTable(rctx, cfg.Name)
		switch {
		case err == nil && got.MetadataTxnID == cfg.MetadataTxnID:
			if !errors.Is(casErr, ErrTableExists) || attempt > 0 {
				c.logger().Warn("metadata: create confirmed by re-reading", "table", cfg.Name, "txnid", cfg.MetadataTxnID, "cas_err", casErr)
			}
			return nil
		case err == nil:
			return fmt.Errorf("%w: %q", ErrTableExists, cfg.Name)
		case errors.Is(err, ErrTableNotFound):
			if casErr = c.Store.CreateTable(rctx, cfg); casErr == nil {
				return nil
			}
		}
		if !sleepBackoff(rctx, attempt) {
			return fmt.Errorf("%w: create %q (txnid %s): %w", ErrOutcomeUnknown, cfg.Name, cfg.MetadataTxnID, casErr)
		}
	}
}

// resolveChange learns the outcome of an UpdateTable of newCfg at rev that
// failed with casErr. If TableConfig names newCfg's txnid, or a successor of
// it, the change is committed. If the revision moved otherwise, our CAS can
// never land: ErrConflict. If it has not moved, our CAS may still be in
// flight, so it is re-issued: whichever copy lands first wins and the other
// fails its compare.
func (c *Committer) resolveChange(ctx context.Context, newCfg TableConfig, rev int64, casErr error) error {
	if errors.Is(casErr, ErrInvalidConfig) {
		return casErr
	}
	rctx, cancel := c.resolveContext(ctx)
	defer cancel()
	table, txnID := newCfg.Name, newCfg.MetadataTxnID
	for attempt := 0; ; attempt++ {
		got, gotRev, err := c.Store.GetTable(rctx, table)
		switch {
		case err == nil && (got.MetadataTxnID == txnID || c.descendsFrom(got, txnID, newCfg.MetadataTxnSeq)):
			if !errors.Is(casErr, ErrConflict) {
				c.logger().Warn("metadata: commit confirmed by re-reading", "table", table, "txnid", txnID, "cas_err", casErr)
			}
			return nil
		case err == nil && gotRev != rev:
			return fmt.Errorf("%w: %q: txn %s (txnseq %d) committed instead of %s", ErrConflict, table, got.MetadataTxnID, got.MetadataTxnSeq, txnID)
		case errors.Is(err, ErrTableNotFound):
			return fmt.Errorf("%w: %q: table vanished", ErrConflict, table)
		case err == nil:
			if casErr = c.Store.UpdateTable(rctx, newCfg, rev); casErr == nil {
				return nil
			}
		}
		if !sleepBackoff(rctx, attempt) {
			return fmt.Errorf("%w: change of %q to %s: %w", ErrOutcomeUnknown, table, txnID, casErr)
		}
	}
}

// maxChainWalk bounds how far descendsFrom follows parents.
const maxChainWalk = 64

// descendsFrom reports whether txnID (at txnSeq) is an ancestor of the
// current txn in cur, as far as the local files show. False when unsure.
func (c *Committer) descendsFrom(cur TableConfig, txnID string, txnSeq uint64) bool {
	if cur.MetadataTxnSeq <= txnSeq || cur.MetadataTxnSeq-txnSeq > maxChainWalk {
		return false
	}
	id := cur.MetadataTxnID
	for range cur.MetadataTxnSeq - txnSeq {
		h, err := c.Files.header(cur.Name, id)
		if err != nil {
			return false
		}
		if h.ParentTxnID == txnID {
			return true
		}
		id = h.ParentTxnID
	}
	return false
}

// retryBackoff paces the committer's retries and the table watch: 20 ms
// doubling to 1 s, with equal jitter.
var retryBackoff = backoff.Policy{Base: 20 * time.Millisecond, Max: time.Second}

// sleepBackoff waits before retry attempt+1 (attempt counts from 0) and
// reports false if ctx ended first.
func sleepBackoff(ctx context.Context, attempt int) bool {
	return backoff.Sleep(ctx, retryBackoff.Delay(attempt+1))
}
