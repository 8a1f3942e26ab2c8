package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
)

// defaultSplitTimeout is the default --wait-timeout of split, which
// bounds the whole command, the wait included.
const defaultSplitTimeout = 10 * time.Minute

// splitFlags are the flags of `tsdb admin split`.
type splitFlags struct {
	at string
	waitFlags
}

func newAdminSplitCmd(f *adminFlags) *cobra.Command {
	var sf splitFlags
	cmd := &cobra.Command{
		Use:   "split TABLE PARTITION",
		Short: "Split a partition in two (SPLIT_BEGIN) and wait for the split to finalize",
		Long: `Split a partition of TABLE in two (POST /api/v1/tables/{t}/partitions/{p}/split).
Splits are normally automatic: a partition whose replicas grow past the table's
partition_size_target is split near the middle of its data. This command forces
one now, whatever the partition's size.

PARTITION is a partition id or a prefix of one that only one current
partition of the table has (see 'tsdb admin partitions TABLE'); an unknown
or ambiguous prefix exits with status 1.

--at TIME is the split point, RFC 3339 ("2026-01-01T12:00:00.5Z") or integer
nanoseconds since the epoch; it must lie strictly inside the partition's
range (the first child holds [begin, TIME), the second [TIME, end)). Without
it the server picks a point near the middle of the partition's data by bytes;
a partition whose rows are all at one time cannot be split (HTTP 409,
cannot_split). A point outside the partition, or a partition that is already
splitting or no longer current, is refused (HTTP 400, invalid_op); every
refusal exits with status 1 and the server's message.

Once SPLIT_BEGIN is committed the command prints one line: the partition,
the split point (RFC 3339 with nanoseconds, and integer ns), the children's
ids and the METADATA txnseq. The split then proceeds in the background: the
children's servers receive the parent's rows, and SPLIT_FINALIZE replaces
the partition by its children. The command reads the METADATA (GET
/api/v1/tables/{t}/metadata) every 500ms, printing a line each time the
progress changes, and exits 0 once the children are partitions of the table,
printing the finalizing txnseq and each child's range and servers. It exits
with status 1 if the split is aborted, or after --wait-timeout or an interrupt
(the split then goes on in the background: follow it with
'tsdb admin partitions TABLE'). A METADATA read that fails while waiting is
shown and retried.

--no-wait prints the first line and exits at once.

--json prints the server's answer, {"txnid", "txnseq", "at" (ns),
"children": [id, id]}, indented; with --no-wait that is all. Without
--no-wait it then prints, once finalized, a JSON array of the children's
METADATA partition entries ({id, begin, end, servers, joining}), and the
progress lines go to stderr so that stdout holds only the two JSON values.

--wait-timeout bounds the whole command, the split request and the wait
included (default 10m; admin's per-request --timeout does not apply here);
each read while waiting is bounded by 10s and retried at the next poll if
it fails.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSplit(cmd, f, sf, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.at, "at", "", "split point: RFC 3339 or integer nanoseconds, strictly inside the partition's range "+
		"(default: the server picks a point near the middle of the data by bytes)")
	sf.register(fl, defaultSplitTimeout, "exit once the split has started, without waiting for it to finalize",
		"time limit of the whole command, waiting for the split to finalize included")
	return cmd
}

// runSplit starts the split of args' partition, prints it, and unless
// --no-wait waits for it to finalize. --wait-timeout bounds all of it.
func runSplit(cmd *cobra.Command, f *adminFlags, sf splitFlags, table, arg string) error {
	var (
		req      api.SplitRequest
		pid      uuid.UUID
		body     []byte // the answer, that --json prints as it is
		start    api.SplitResponse
		children []api.Partition
		finalSeq uint64
	)
	return runChange(cmd, f, sf.waitFlags, change{
		check: func() (err error) {
			req, err = sf.request()
			return err
		},
		whole: true,
		start: func(ctx context.Context, c *adminClient) (line string, err error) {
			if pid, body, start, err = c.startSplit(ctx, table, arg, req); err != nil {
				return "", err
			}
			return splitStartedLine(table, pid, start), nil
		},
		answer: func() []byte { return body },
		wait: func(ctx context.Context, w *waiter) (err error) {
			children, finalSeq, err = waitSplit(ctx, w, table, pid, start)
			return err
		},
		result: func() any { return children },
		done:   func() string { return finalizedLine(finalSeq, children) },
	})
}

// startSplit starts the split of table's partition arg, and returns the
// partition's id and the server's answer, raw and decoded.
func (c *adminClient) startSplit(ctx context.Context, table, arg string, req api.SplitRequest) (uuid.UUID, []byte,
	api.SplitResponse, error) {
	var resp api.SplitResponse
	pid, err := c.resolvePartition(ctx, table, arg)
	if err != nil {
		return pid, nil, resp, err
	}
	body, err := c.post(ctx, api.PartitionPath(table, pid)+"/split", req)
	if err != nil {
		return pid, nil, resp, err
	}
	if err := c.decode(body, &resp); err != nil {
		return pid, nil, resp, err
	}
	if len(resp.Children) == 0 {
		return pid, nil, resp, &requestError{fmt.Errorf("%s: the split answer names no children: %s",
			c.base, strings.TrimSpace(string(body)))}
	}
	return pid, body, resp, nil
}

// request checks the flags and builds the request body: {} or {"at": …}.
// A bad --at is a usage error, found before any request.
func (sf splitFlags) request() (api.SplitRequest, error) {
	if err := sf.waitFlags.check(); err != nil {
		return api.SplitRequest{}, err
	}
	if sf.at == "" {
		return api.SplitRequest{}, nil
	}
	if _, err := ingest.ParseTime(sf.at); err != nil {
		return api.SplitRequest{}, fmt.Errorf("--at %q: want RFC 3339 (2026-01-01T12:00:00.5Z) or integer nanoseconds: %w", sf.at, err)
	}
	return api.SplitRequest{At: sf.at}, nil
}

// splitStartedLine describes a committed SPLIT_BEGIN.
func splitStartedLine(table string, pid uuid.UUID, r api.SplitResponse) string {
	ids := make([]string, len(r.Children))
	for i, c := range r.Children {
		ids[i] = c.String()
	}
	return fmt.Sprintf("split started: partition %s of %s at %s (%d ns), children %s (txnseq %d, txnid %s)",
		pid, table, time.Unix(0, r.At).UTC().Format(time.RFC3339Nano), r.At, strings.Join(ids, ", "), r.TxnSeq, r.TxnID)
}

// finalizedLine describes the children once the split is finalized.
func finalizedLine(txnSeq uint64, children []api.Partition) string {
	parts := make([]string, len(children))
	for i, p := range children {
		parts[i] = fmt.Sprintf("%s [%s, %s) on %s", p.ID, bound(p.Begin, "-inf"), bound(p.End, "+inf"), orDash(serverIDs(p.Servers)))
	}
	return fmt.Sprintf("finalized at txnseq %d: children %s", txnSeq, strings.Join(parts, "; "))
}

// serverIDs lists the placements' server ids, comma-separated.
func serverIDs(ps []api.Placement) string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ServerID
	}
	return strings.Join(ids, ",")
}

// waitSplit polls the METADATA until the split of pid that start began
// is finalized (it returns the children's partitions and the txnseq of
// the file it saw them in) or aborted.
func waitSplit(ctx context.Context, w *waiter, table string, pid uuid.UUID, start api.SplitResponse) ([]api.Partition, uint64,
	error) {
	w.subject = fmt.Sprintf("split of partition %s of %s", pid, table)
	w.after = fmt.Sprintf("it continues in the background: check it with 'tsdb admin partitions %s'", table)
	w.interrupted, w.unfinished = "interrupted", "not finalized"
	var (
		children []api.Partition
		seq      uint64
	)
	err := w.run(ctx, func(ctx context.Context) (bool, error) {
		resp, ok := read(ctx, w, "the METADATA", w.c.currentMetadata(table))
		if !ok {
			return false, nil
		}
		st := splitProgress(resp.Metadata, pid, start)
		switch {
		case st.err != nil:
			return false, &requestError{fmt.Errorf("%w (see 'tsdb admin partitions %s')", st.err, table)}
		case st.children != nil:
			children, seq = st.children, resp.Metadata.TxnSeq
			return true, nil
		case st.loading:
			st.line += copyProgress(ctx, w, table, pid, start.Children)
		}
		w.report(st.line)
		return false, nil
	})
	return children, seq, err
}

// copyProgress reads the parent's replicas (GET /api/v1/tables/{t}?replicas=1)
// and says, per child, how many of the parent replicas' split targets have
// confirmed everything their source held when it learned of the split. It
// is a detail: "" when the read fails or reports no split target.
func copyProgress(ctx context.Context, w *waiter, table string, parent uuid.UUID, children []uuid.UUID) string {
	if w.readTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.readTimeout)
		defer cancel()
	}
	resp, err := w.c.api.TableReplicas(ctx, table)
	if err != nil {
		return ""
	}
	i := slices.IndexFunc(resp.Partitions, func(p api.PartitionReplicas) bool { return p.ID == parent })
	if i < 0 {
		return ""
	}
	return splitTargetsText(resp.Partitions[i].Replicas, children)
}

// splitTargetsText formats, per child, the split targets past their mark
// out of all: "; caught up: child 1a2b3c4d 1/2, child 5e6f7a8b 0/2".
func splitTargetsText(replicas []api.ReplicaStatus, children []uuid.UUID) string {
	reached := make(map[uuid.UUID]int, len(children))
	total := make(map[uuid.UUID]int, len(children))
	for _, r := range replicas {
		for _, t := range r.Targets {
			if t.Kind != api.TargetSplit {
				continue
			}
			total[t.PartitionID]++
			if t.MarkReached {
				reached[t.PartitionID]++
			}
		}
	}
	if len(total) == 0 {
		return ""
	}
	parts := make([]string, len(children))
	for i, c := range children {
		parts[i] = fmt.Sprintf("child %s %d/%d", prefix(c.String(), shortPlacement), reached[c], total[c])
	}
	return "; copies caught up: " + strings.Join(parts, ", ")
}

// splitState is what one METADATA file says of a split.
type splitState struct {
	// children are the children's partitions once the split is finalized.
	children []api.Partition
	// err says the split was aborted.
	err error
	// line is the progress line while it goes on; loading says the
	// children are receiving the parent's rows.
	line    string
	loading bool
}

// splitProgress reads where the split started by start stands in f.
func splitProgress(f *api.File, parent uuid.UUID, start api.SplitResponse) splitState {
	switch {
	case f == nil:
		return splitState{line: "waiting: the table has no METADATA file"}
	case f.TxnSeq < start.TxnSeq:
		return splitState{line: fmt.Sprintf("waiting: the METADATA read is at txnseq %d, before the split's %d", f.TxnSeq, start.TxnSeq)}
	}
	if p, ok := f.Partition(parent); ok {
		return splittingState(p, start)
	}
	children := make([]api.Partition, 0, len(start.Children))
	for _, id := range start.Children {
		c, ok := f.Partition(id)
		if !ok {
			return splitState{err: fmt.Errorf("split aborted: partition %s is gone at txnseq %d but its child %s is not a partition",
				parent, f.TxnSeq, id)}
		}
		children = append(children, *c)
	}
	return splitState{children: children}
}

// splittingState is the state while the parent p is still current.
func splittingState(p *api.Partition, start api.SplitResponse) splitState {
	if p.Split == nil {
		return splitState{err: fmt.Errorf("split aborted: partition %s is current and no longer splitting", p.ID)}
	}
	ids := make([]uuid.UUID, len(p.Split.Children))
	on := make([]string, len(p.Split.Children))
	for i, c := range p.Split.Children {
		ids[i] = c.ID
		on[i] = fmt.Sprintf("%s on %s", prefix(c.ID.String(), shortPlacement), orDash(serverIDs(c.Servers)))
	}
	if !slices.Equal(ids, start.Children) {
		return splitState{err: fmt.Errorf("split aborted: partition %s is now splitting into other children (%s), another split", p.ID,
			strings.Join(on, ", "))}
	}
	return splitState{line: "waiting: children loading: " + strings.Join(on, ", "), loading: true}
}
