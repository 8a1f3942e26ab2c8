package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tsdb/tsdb/http/api"
)

// The operator's commands of DESIGN.md section 9: stale, drain, undrain,
// move, offline, online and rebalance. Every manual action stays visible
// until it is undone: an offline partition in its METADATA entry, a drain
// mark in etcd, both in `tsdb admin stale`.

// healthPath is the path of the cluster's health report.
const healthPath = api.HealthPath

func newAdminStaleCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "stale",
		Short: "List the cluster's problems (under-replicated, offline, draining, expired leases…); exit status 1 if any",
		Long: `List what needs an operator's attention (GET /api/v1/cluster/health):
partitions with fewer live replicas than their table's replication factor
(under_replicated) or more than it with nothing joining (over_replicated),
servers a METADATA lists whose lease was not renewed (lease_expired), gaps or
overlaps in a table's partition map or a METADATA that could not be read
(missing_range), tables short of live metadata servers (metadata_servers), no
elected master (no_master), and the operator's own standing actions:
partitions taken offline (offline) and servers marked draining (draining).
Every manual action shows here until it is undone.

It prints one line per problem (KIND, TABLE, PARTITION id prefix, SERVER,
MESSAGE), then a summary: how many servers are live, which is master, and
whether partition replicas are balanced over the live, non-draining servers
(each within one of the mean). --json prints the server's answer, indented.

Exit status: 0 when there is no problem, 1 when there is at least one (stderr
then says how many) or the request failed, 2 for a usage error; it suits a
monitoring check.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStale(cmd, f) },
	}
}

// runStale reads the cluster health, prints it, and fails (exit status 1)
// when it lists a problem.
func runStale(cmd *cobra.Command, f *adminFlags) error {
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	// --json prints the server's answer as it is: read it raw.
	body, err := c.get(cmdContext(cmd), healthPath, nil)
	if err != nil {
		return err
	}
	var h api.HealthResponse
	if err := c.decode(body, &h); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.json {
		err = printIndented(out, body)
	} else {
		err = printHealth(out, h)
	}
	if err != nil {
		return err
	}
	if n := len(h.Problems); n > 0 {
		return &requestError{fmt.Errorf("stale: %s found", plural(n, "problem", "problems"))}
	}
	return nil
}

func newAdminDrainCmd(f *adminFlags) *cobra.Command {
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "drain SERVER",
		Short: "Move every partition replica off a server so that it can be stopped",
		Long: `Mark SERVER draining (POST /api/v1/servers/{id}/drain). The mark is kept in
etcd until 'tsdb admin undrain SERVER' removes it; while it stands, the master
moves every partition replica off the server (it joins another server to each
partition, then removes SERVER once the newcomer has caught up), places no
new replica on it, and 'tsdb admin stale' lists it. The server keeps serving
meanwhile.

The command then reads the cluster health (GET /api/v1/cluster/health) every
500ms, printing how many partition replicas the METADATA still gives the
server each time that changes, and exits 0 once it has none: the server can
then be stopped. A read that fails while waiting is shown and retried; each
read is bounded by --timeout. --no-wait exits once the mark is set.

Exit status 1 when the server is unknown (HTTP 404, server_not_found), when it
is missing from the cluster health, when its mark is removed during the wait,
or after --wait-timeout or an interrupt (the drain then goes on in the
background: follow it with 'tsdb admin stale'); 2 for a usage error.

--json prints one JSON object at the end, {"drain": the server's answer
{"server", "draining", "since"}, "server": the server's entry in the final
cluster health {"id", "live", "draining", "partitions", ...}} ("server" is
absent with --no-wait); the progress lines then go to stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runDrain(cmd, f, wf, args[0]) },
	}
	wf.register(cmd.Flags(), defaultOpsWaitTimeout,
		"exit once the server is marked draining, without waiting for its replicas to move",
		"time limit of the wait for the server to hold no replica (the drain goes on in the background after it)")
	return cmd
}

// drainResult is the --json output of drain.
type drainResult struct {
	Drain  api.DrainResponse `json:"drain"`
	Server *api.ServerHealth `json:"server,omitempty"`
}

// runDrain marks server draining and, unless --no-wait, waits until it
// holds no partition replica.
func runDrain(cmd *cobra.Command, f *adminFlags, wf waitFlags, server string) error {
	var res drainResult
	return runChange(cmd, f, wf, change{
		check: func() error { return checkServerArg("SERVER", server) },
		start: func(ctx context.Context, c *adminClient) (string, error) {
			r, err := c.api.Drain(ctx, server, true)
			if err != nil {
				return "", c.fail(err)
			}
			res.Drain = r
			return drainStartedLine(server, r, wf.noWait), nil
		},
		wait: func(ctx context.Context, w *waiter) error {
			sh, err := waitDrained(ctx, w, server)
			res.Server = &sh
			return err
		},
		result: func() any { return res },
		done:   func() string { return drainedLine(server) },
	})
}

// waitDrained polls the cluster health until server holds no partition
// replica, and returns its entry then.
func waitDrained(ctx context.Context, w *waiter, server string) (api.ServerHealth, error) {
	w.subject = "drain of " + server
	w.after = fmt.Sprintf("the drain goes on in the background: follow it with 'tsdb admin stale' ('tsdb admin undrain %s' cancels it)",
		server)
	var final api.ServerHealth
	err := w.run(ctx, func(ctx context.Context) (bool, error) {
		h, ok := read(ctx, w, "the cluster health", w.c.api.Health)
		if !ok {
			return false, nil
		}
		sh, done, err := drainProgress(h, server)
		if done || err != nil {
			final = sh
			return done, err
		}
		w.report(drainProgressLine(sh, h))
		return false, nil
	})
	return final, err
}

// drainProgress reads where the drain of server stands in h: done once it
// holds no partition replica; an error if it is missing from h or no
// longer marked draining.
func drainProgress(h api.HealthResponse, server string) (api.ServerHealth, bool, error) {
	sh, ok := findServer(h.Servers, server)
	switch {
	case !ok:
		return sh, false, &requestError{fmt.Errorf("drain of %s: the server is missing from the cluster health "+
			"(neither live nor listed in any METADATA); its drain mark stays until 'tsdb admin undrain %s'", server, server)}
	case sh.Partitions == 0:
		return sh, true, nil
	case !sh.Draining:
		return sh, false, &requestError{fmt.Errorf("drain of %s: the server is no longer marked draining "+
			"('tsdb admin undrain %s' was run?) and still holds %s", server, server, plural(sh.Partitions, "partition replica", "partition replicas"))}
	}
	return sh, false, nil
}

func newAdminUndrainCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "undrain SERVER",
		Short: "Remove a server's drain mark: it takes partition replicas again",
		Long: `Remove the drain mark of SERVER (DELETE /api/v1/servers/{id}/drain), undoing
'tsdb admin drain SERVER': the master stops moving replicas off it and may
place replicas on it again (a later rebalance may move some back). Replicas
already moved stay where they are. Removing a mark that is not there is not
an error.

Exit status 1 when the request fails (an unknown server is HTTP 404,
server_not_found), 2 for a usage error. --json prints the server's answer
{"server", "draining": false}, indented.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runUndrain(cmd, f, args[0]) },
	}
}

// runUndrain removes server's drain mark.
func runUndrain(cmd *cobra.Command, f *adminFlags, server string) error {
	if err := checkServerArg("SERVER", server); err != nil {
		return err
	}
	return runNow(cmd, f, true, func(ctx context.Context, c *adminClient) ([]byte, error) {
		return c.do(ctx, http.MethodDelete, api.DrainPath(server), nil, nil)
	}, func(api.DrainResponse) string { return server + " is no longer draining" })
}

func newAdminMoveCmd(f *adminFlags) *cobra.Command {
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "move TABLE PARTITION FROM TO",
		Short: "Move a partition replica from one server to another (join TO, wait, then remove FROM)",
		Long: `Move a replica of a partition of TABLE from server FROM to server TO: join TO
to the partition (JOIN_SERVER, POST /api/v1/tables/{t}/partitions/{p}/join),
wait until it has caught up and serves (JOIN_FINALIZE: TO is listed among the
partition's servers), then remove FROM (REMOVE_SERVER, …/leave), which pushes
what the others lack and drops its copy. The partition never has fewer
replicas than before.

PARTITION is a partition id or a prefix of one that only one current
partition of the table has (see 'tsdb admin partitions TABLE'). FROM must be
one of the partition's servers and TO neither a server nor joining; otherwise
the command exits with status 1 before changing anything.

While waiting it reads the METADATA (GET /api/v1/tables/{t}/metadata) every
500ms and prints a line each time the progress changes. --no-wait only joins
TO and says how to finish the move ('tsdb admin leave TABLE PARTITION FROM'
once TO serves).

Exit status 1 when a request is refused (the server's message is printed),
when the partition disappears during the wait (split or dropped by
retention: FROM is then not removed), when TO stops joining, or after
--wait-timeout or an interrupt (the join goes on in the background, FROM is
not removed); 2 for a usage error.

--json prints one JSON object at the end: {"table", "partition", "from",
"to", "txnseq" (of the REMOVE_SERVER, or of the JOIN_SERVER with --no-wait),
"complete" (TO serves the partition and FROM no longer does; false with
--no-wait)}; the progress lines then go to stderr.`,
		Args: cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMove(cmd, f, wf, moveArgs{table: args[0], partition: args[1], from: args[2], to: args[3]})
		},
	}
	wf.register(cmd.Flags(), defaultOpsWaitTimeout,
		"only join TO: neither wait for it to catch up nor remove FROM ('tsdb admin leave' does that later)",
		"time limit of the wait for TO to catch up (FROM is then not removed)")
	return cmd
}

// moveArgs are the arguments of move.
type moveArgs struct {
	table, partition, from, to string
}

// check is the usage check of the arguments.
func (a moveArgs) check() error {
	if err := checkServerArg("FROM", a.from); err != nil {
		return err
	}
	if err := checkServerArg("TO", a.to); err != nil {
		return err
	}
	if a.from == a.to {
		return fmt.Errorf("FROM and TO are both %q: want two different servers", a.from)
	}
	return nil
}

// moveResult is the --json output of move.
type moveResult struct {
	Table     string    `json:"table"`
	Partition uuid.UUID `json:"partition"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	TxnSeq    uint64    `json:"txnseq"`
	Complete  bool      `json:"complete"`
	// left: this command removed FROM (TxnSeq is its REMOVE_SERVER's).
	left bool
}

// runMove joins TO to the partition, waits for it to serve, and removes FROM.
func runMove(cmd *cobra.Command, f *adminFlags, wf waitFlags, a moveArgs) error {
	parent := cmdContext(cmd)
	var res moveResult
	return runChange(cmd, f, wf, change{
		check: a.check,
		start: func(ctx context.Context, c *adminClient) (line string, err error) {
			if res, err = c.startMove(ctx, a); err != nil {
				return "", err
			}
			return moveJoinedLine(a, res.Partition, res.TxnSeq, wf.noWait), nil
		},
		wait: func(ctx context.Context, w *waiter) (err error) {
			res, err = finishMove(parent, ctx, w, a, res.Partition, res.TxnSeq)
			return err
		},
		result: func() any { return res },
		done:   func() string { return moveDoneLine(res) },
	})
}

// startMove joins TO to a's partition once checkMove allows it: the result
// names the partition and the JOIN_SERVER's txnseq.
func (c *adminClient) startMove(ctx context.Context, a moveArgs) (moveResult, error) {
	pid, err := c.resolvePartition(ctx, a.table, a.partition)
	if err != nil {
		return moveResult{}, err
	}
	if err := c.checkMove(ctx, a, pid); err != nil {
		return moveResult{}, err
	}
	joined, err := c.api.JoinServer(ctx, a.table, pid, api.ServerChangeRequest{Server: a.to})
	if err != nil {
		return moveResult{}, c.fail(err)
	}
	return moveResult{Table: a.table, Partition: pid, From: a.from, To: a.to, TxnSeq: joined.TxnSeq}, nil
}

// checkMove reads the partition pid of the table and checks that FROM is
// one of its servers and TO does not hold it yet.
func (c *adminClient) checkMove(ctx context.Context, a moveArgs, pid uuid.UUID) error {
	resp, err := c.api.Table(ctx, a.table)
	if err != nil {
		return c.fail(err)
	}
	for _, p := range resp.Partitions {
		if p.ID == pid {
			return checkMovePartition(p, a)
		}
	}
	return &requestError{fmt.Errorf("table %q has no current partition %s (see 'tsdb admin partitions %s')", a.table, pid, a.table)}
}

// checkMovePartition checks a move of p from a.from to a.to.
func checkMovePartition(p api.Partition, a moveArgs) error {
	holders := fmt.Sprintf("servers %s, joining %s", orDash(serverIDs(p.Servers)), orDash(serverIDs(p.Joining)))
	switch {
	case !hasServer(p.Servers, a.from):
		return &requestError{fmt.Errorf("%s is not a server of partition %s of %s (%s): nothing to move off it",
			a.from, p.ID, a.table, holders)}
	case hasServer(p.Servers, a.to):
		return &requestError{fmt.Errorf("%s already serves partition %s of %s (%s): choose another TO", a.to, p.ID, a.table, holders)}
	case hasServer(p.Joining, a.to):
		return &requestError{fmt.Errorf("%s is already joining partition %s of %s (%s): wait for it to serve, then "+
			"'tsdb admin leave %s %s %s'", a.to, p.ID, a.table, holders, a.table, prefix(p.ID.String(), shortPartition), a.from)}
	}
	return nil
}

// finishMove waits (under ctx) for TO to serve, then removes FROM (under
// parent, the command's context).
func finishMove(parent, ctx context.Context, w *waiter, a moveArgs, pid uuid.UUID, joinSeq uint64) (moveResult, error) {
	st, err := waitJoined(ctx, w, a, pid, joinSeq)
	if err != nil {
		return moveResult{}, err
	}
	res := moveResult{Table: a.table, Partition: pid, From: a.from, To: a.to, TxnSeq: st.txnSeq, Complete: true}
	fmt.Fprintln(w.out, moveServesLine(a, pid, st))
	if !st.fromListed {
		return res, nil
	}
	left, err := w.c.api.LeaveServer(parent, a.table, pid, api.ServerChangeRequest{Server: a.from})
	if err != nil {
		return moveResult{}, &requestError{fmt.Errorf("%s serves partition %s of %s, but removing %s failed: %w; %s is still a server "+
			"of it: retry with 'tsdb admin leave %s %s %s'", a.to, pid, a.table, a.from, w.c.fail(err), a.from, a.table,
			prefix(pid.String(), shortPartition), a.from)}
	}
	res.TxnSeq, res.left = left.TxnSeq, true
	return res, nil
}

// joinState is what one METADATA file says of TO's join.
type joinState struct {
	// done: TO is one of the partition's servers, at txnSeq.
	done   bool
	txnSeq uint64
	// fromListed: FROM is still one of the partition's servers.
	fromListed bool
	// line is the progress line while TO joins.
	line string
}

// waitJoined polls the METADATA until TO serves the partition.
func waitJoined(ctx context.Context, w *waiter, a moveArgs, pid uuid.UUID, joinSeq uint64) (joinState, error) {
	w.subject = fmt.Sprintf("move of partition %s of %s from %s to %s", pid, a.table, a.from, a.to)
	w.after = fmt.Sprintf("%s goes on joining in the background and %s was not removed: once %s is listed among the partition's "+
		"servers ('tsdb admin partitions %s'), run 'tsdb admin leave %s %s %s'", a.to, a.from, a.to, a.table, a.table,
		prefix(pid.String(), shortPartition), a.from)
	var final joinState
	err := w.run(ctx, func(ctx context.Context) (bool, error) {
		resp, ok := read(ctx, w, "the METADATA", w.c.currentMetadata(a.table))
		if !ok {
			return false, nil
		}
		st, err := joinProgress(resp.Metadata, a, pid, joinSeq)
		if st.done || err != nil {
			final = st
			return st.done, err
		}
		w.report(st.line)
		return false, nil
	})
	return final, err
}

// currentMetadata returns the read of table's current METADATA.
func (c *adminClient) currentMetadata(table string) func(context.Context) (api.MetadataResponse, error) {
	return func(ctx context.Context) (api.MetadataResponse, error) { return c.api.Metadata(ctx, table, "") }
}

// joinProgress reads where TO's join of partition pid, committed at
// joinSeq, stands in f.
func joinProgress(f *api.File, a moveArgs, pid uuid.UUID, joinSeq uint64) (joinState, error) {
	switch {
	case f == nil:
		return joinState{line: "waiting: the table has no METADATA file"}, nil
	case f.TxnSeq < joinSeq:
		return joinState{line: fmt.Sprintf("waiting: the METADATA read is at txnseq %d, before the join's %d", f.TxnSeq, joinSeq)}, nil
	}
	p, ok := f.Partition(pid)
	switch {
	case !ok:
		return joinState{}, &requestError{fmt.Errorf("move of partition %s of %s: the partition is gone at txnseq %d (split, or dropped "+
			"by retention) before %s served it; %s was not removed: see 'tsdb admin partitions %s' for the partitions that replaced it",
			pid, a.table, f.TxnSeq, a.to, a.from, a.table)}
	case hasServer(p.Servers, a.to):
		return joinState{done: true, txnSeq: f.TxnSeq, fromListed: hasServer(p.Servers, a.from)}, nil
	case hasServer(p.Joining, a.to):
		return joinState{line: fmt.Sprintf("waiting: %s is joining partition %s of %s, catching up from %s", a.to,
			prefix(pid.String(), shortPartition), a.table, orDash(serverIDs(p.Servers)))}, nil
	}
	return joinState{}, &requestError{fmt.Errorf("move of partition %s of %s: %s is no longer joining it at txnseq %d (its join was "+
		"undone); %s was not removed", pid, a.table, a.to, f.TxnSeq, a.from)}
}

// hasServer says whether server has a placement in ps.
func hasServer(ps []api.Placement, server string) bool {
	for _, p := range ps {
		if p.ServerID == server {
			return true
		}
	}
	return false
}

func newAdminOfflineCmd(f *adminFlags, offline bool) *cobra.Command {
	if offline {
		return &cobra.Command{
			Use:   "offline TABLE PARTITION",
			Short: "Take a partition out of service (SET_OFFLINE): its inserts and queries fail until it is back online",
			Long: `Take a partition of TABLE out of service (SET_OFFLINE, POST
/api/v1/tables/{t}/partitions/{p}/offline), as in a live-site incident where
one partition harms the rest: inserts into its range and queries of it fail
with HTTP 503 partition_offline (a query with allow_partial=1 skips it) until
'tsdb admin online TABLE PARTITION'. Its replicas keep their data and keep
replicating. The mark is in the partition's METADATA entry ('tsdb admin
metadata TABLE') and 'tsdb admin stale' lists it until it is undone.

PARTITION is a partition id or a prefix of one that only one current
partition of the table has (see 'tsdb admin partitions TABLE').

Exit status 1 when the request fails (an unknown or ambiguous prefix, or the
server's refusal, whose message is printed), 2 for a usage error. --json
prints the server's answer {"txnid", "txnseq"}, indented.`,
			Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error { return runOffline(cmd, f, args[0], args[1], true) },
		}
	}
	return &cobra.Command{
		Use:   "online TABLE PARTITION",
		Short: "Bring a partition taken offline back into service",
		Long: `Bring a partition of TABLE back into service (POST
/api/v1/tables/{t}/partitions/{p}/online), undoing 'tsdb admin offline':
inserts into its range and queries of it are served again, and 'tsdb admin
stale' no longer lists it. Bringing online a partition that is not offline
is not an error.

PARTITION is a partition id or a prefix of one that only one current
partition of the table has (see 'tsdb admin partitions TABLE').

Exit status 1 when the request fails (an unknown or ambiguous prefix, or the
server's refusal, whose message is printed), 2 for a usage error. --json
prints the server's answer {"txnid", "txnseq"}, indented.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runOffline(cmd, f, args[0], args[1], false) },
	}
}

// runOffline takes a partition offline, or back online.
func runOffline(cmd *cobra.Command, f *adminFlags, table, arg string, offline bool) error {
	verb := "/online"
	if offline {
		verb = "/offline"
	}
	var pid uuid.UUID
	return runNow(cmd, f, true, func(ctx context.Context, c *adminClient) (body []byte, err error) {
		if pid, err = c.resolvePartition(ctx, table, arg); err != nil {
			return nil, err
		}
		return c.post(ctx, api.PartitionPath(table, pid)+verb, struct{}{})
	}, func(resp api.ChangeResponse) string { return offlineLine(table, pid, resp, offline) })
}

func newAdminRebalanceCmd(f *adminFlags) *cobra.Command {
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Ask the master to even out partition replicas over the servers, and wait until it has",
		Long: `Ask the master to rebalance now (POST /api/v1/cluster/rebalance): it moves
partition replicas (join the less loaded server, then remove the most loaded
one) until every live, non-draining server holds within one of the mean
number of replicas. The master also does this by itself when a server joins.

The command then reads the cluster health (GET /api/v1/cluster/health) every
500ms, printing the replica count of each server ("s1=5 s2=4 (mean 4.5)";
draining and dead servers are marked) each time the counts change, and exits
0 once they are balanced. A read that fails while waiting is shown and
retried; each read is bounded by --timeout. --no-wait exits once the request
is recorded.

Exit status 1 when the request fails, or after --wait-timeout or an interrupt
(the rebalance goes on in the background: follow it with 'tsdb admin stale');
2 for a usage error.

--json prints one JSON object at the end: {"rebalance": the server's answer
{"requested_at"}, "health": the final cluster health (absent with
--no-wait)}; the progress lines then go to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRebalance(cmd, f, wf) },
	}
	wf.register(cmd.Flags(), defaultOpsWaitTimeout,
		"exit once the request is recorded, without waiting for the replicas to be balanced",
		"time limit of the wait for the replicas to be balanced (the rebalance goes on in the background after it)")
	return cmd
}

// rebalanceResult is the --json output of rebalance.
type rebalanceResult struct {
	Rebalance api.RebalanceResponse `json:"rebalance"`
	Health    *api.HealthResponse   `json:"health,omitempty"`
}

// runRebalance asks for a rebalance and, unless --no-wait, waits until the
// health says the replicas are balanced.
func runRebalance(cmd *cobra.Command, f *adminFlags, wf waitFlags) error {
	var res rebalanceResult
	return runChange(cmd, f, wf, change{
		start: func(ctx context.Context, c *adminClient) (string, error) {
			r, err := c.api.Rebalance(ctx)
			if err != nil {
				return "", c.fail(err)
			}
			res.Rebalance = r
			return rebalanceStartedLine(r, wf.noWait), nil
		},
		wait: func(ctx context.Context, w *waiter) error {
			h, err := waitBalanced(ctx, w)
			res.Health = &h
			return err
		},
		result: func() any { return res },
		done: func() string {
			return fmt.Sprintf("balanced: every live, non-draining server holds within one of the mean (%.1f)", res.Health.Mean)
		},
	})
}

// waitBalanced polls the cluster health until it says balanced.
func waitBalanced(ctx context.Context, w *waiter) (api.HealthResponse, error) {
	w.subject = "rebalance"
	w.after = "the rebalance goes on in the background: follow it with 'tsdb admin stale'"
	var final api.HealthResponse
	err := w.run(ctx, func(ctx context.Context) (bool, error) {
		h, ok := read(ctx, w, "the cluster health", w.c.api.Health)
		if !ok {
			return false, nil
		}
		w.report(countsLine(h))
		final = h
		return h.Balanced, nil
	})
	return final, err
}
