package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tsdb/tsdb/http/api"
)

// The operator's commands of DESIGN.md section 9: stale, drain, undrain,
// move, offline, online and rebalance. Every manual action stays visible
// until it is undone: an offline partition in its METADATA entry, a drain
// mark in etcd, both in `tsdb admin stale`.

// Paths of the operator's API (http/api/admin.go).
const (
	healthPath    = "/api/v1/cluster/health"
	rebalancePath = "/api/v1/cluster/rebalance"
)

// defaultOpsWaitTimeout is the default --wait-timeout of drain, move and
// rebalance: moving replicas copies their rows, which takes a while.
const defaultOpsWaitTimeout = 30 * time.Minute

// opsPollInterval is how often drain, move and rebalance read the cluster's
// state while they wait. A variable so that tests can shorten it.
var opsPollInterval = 500 * time.Millisecond

// errOpsWaitTimeout is the cause of a wait's context when --wait-timeout
// passes, to tell it from an interrupt.
var errOpsWaitTimeout = errors.New("operator wait timed out")

// waitFlags are the flags of the commands that wait for the master.
type waitFlags struct {
	noWait  bool
	timeout time.Duration
}

// register adds --no-wait and --wait-timeout with their descriptions.
func (wf *waitFlags) register(fs *pflag.FlagSet, noWaitUsage, timeoutUsage string) {
	fs.BoolVar(&wf.noWait, "no-wait", false, noWaitUsage)
	fs.DurationVar(&wf.timeout, "wait-timeout", defaultOpsWaitTimeout, timeoutUsage)
}

// check is the usage check of the flags, before any request.
func (wf waitFlags) check() error {
	if wf.timeout <= 0 {
		return fmt.Errorf("--wait-timeout %v: want a positive duration", wf.timeout)
	}
	return nil
}

// waitContext is the context of a wait: it ends after --wait-timeout (with
// errOpsWaitTimeout as its cause) or on an interrupt (the parent's end).
func (wf waitFlags) waitContext(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, wf.timeout, errOpsWaitTimeout)
}

// cmdContext is the command's context, or Background for a command run
// with Execute rather than ExecuteContext.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// checkServerArg is the usage check of a SERVER argument.
func checkServerArg(name, server string) error {
	if strings.TrimSpace(server) == "" {
		return fmt.Errorf("%s: want a server id (see 'tsdb admin servers')", name)
	}
	return nil
}

// progressWriter is where the progress lines of a wait go: stdout, or
// stderr with --json so that stdout holds only the JSON value.
func progressWriter(cmd *cobra.Command, f *adminFlags) io.Writer {
	if f.json {
		return cmd.ErrOrStderr()
	}
	return cmd.OutOrStdout()
}

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
	wf.register(cmd.Flags(), "exit once the server is marked draining, without waiting for its replicas to move",
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
	if err := checkServerArg("SERVER", server); err != nil {
		return err
	}
	if err := wf.check(); err != nil {
		return err
	}
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	parent := cmdContext(cmd)
	body, err := c.post(parent, drainPath(server), struct{}{})
	if err != nil {
		return err
	}
	res := drainResult{}
	if err := c.decode(body, &res.Drain); err != nil {
		return err
	}
	progress := progressWriter(cmd, f)
	fmt.Fprintln(progress, drainStartedLine(server, res.Drain, wf.noWait))
	if !wf.noWait {
		ctx, cancel := wf.waitContext(parent)
		defer cancel()
		sh, err := waitDrained(ctx, c, progress, wf.timeout, server)
		if err != nil {
			return err
		}
		res.Server = &sh
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), res)
	}
	if wf.noWait {
		return nil
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), drainedLine(server))
	return err
}

// drainPath is the API path of a server's drain mark.
func drainPath(server string) string {
	return "/api/v1/servers/" + url.PathEscape(server) + "/drain"
}

// waitDrained polls the cluster health until server holds no partition
// replica, and returns its entry then.
func waitDrained(ctx context.Context, c *adminClient, out io.Writer, timeout time.Duration, server string) (api.ServerHealth, error) {
	w := &waiter{c: c, out: out, timeout: timeout,
		subject: "drain of " + server,
		after: fmt.Sprintf("the drain goes on in the background: follow it with 'tsdb admin stale' ('tsdb admin undrain %s' cancels it)",
			server)}
	var final api.ServerHealth
	err := w.run(ctx, func(ctx context.Context) (bool, error) {
		var h api.HealthResponse
		if !w.read(ctx, "the cluster health", healthPath, &h) {
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
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	body, err := c.do(cmdContext(cmd), http.MethodDelete, drainPath(server), nil, nil)
	if err != nil {
		return err
	}
	var resp api.DrainResponse
	if err := c.decode(body, &resp); err != nil {
		return err
	}
	if f.json {
		return printIndented(cmd.OutOrStdout(), body)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s is no longer draining\n", server)
	return err
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
	wf.register(cmd.Flags(), "only join TO: neither wait for it to catch up nor remove FROM ('tsdb admin leave' does that later)",
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
	if err := a.check(); err != nil {
		return err
	}
	if err := wf.check(); err != nil {
		return err
	}
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	parent := cmdContext(cmd)
	pid, err := c.resolvePartition(parent, a.table, a.partition)
	if err != nil {
		return err
	}
	if err := c.checkMove(parent, a, pid); err != nil {
		return err
	}
	var joined api.ChangeResponse
	if err := c.postDecode(parent, partitionPath(a.table, pid)+"/join", api.ServerChangeRequest{Server: a.to}, &joined); err != nil {
		return err
	}
	res := moveResult{Table: a.table, Partition: pid, From: a.from, To: a.to, TxnSeq: joined.TxnSeq}
	progress := progressWriter(cmd, f)
	fmt.Fprintln(progress, moveJoinedLine(a, pid, joined.TxnSeq, wf.noWait))
	if !wf.noWait {
		if res, err = c.finishMove(parent, wf, progress, a, pid, joined.TxnSeq); err != nil {
			return err
		}
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), res)
	}
	if wf.noWait {
		return nil
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), moveDoneLine(res))
	return err
}

// checkMove reads the partition pid of the table and checks that FROM is
// one of its servers and TO does not hold it yet.
func (c *adminClient) checkMove(ctx context.Context, a moveArgs, pid uuid.UUID) error {
	body, err := c.get(ctx, "/api/v1/tables/"+url.PathEscape(a.table), nil)
	if err != nil {
		return err
	}
	var resp api.TableResponse
	if err := c.decode(body, &resp); err != nil {
		return err
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

// finishMove waits for TO to serve, then removes FROM.
func (c *adminClient) finishMove(parent context.Context, wf waitFlags, progress io.Writer, a moveArgs, pid uuid.UUID,
	joinSeq uint64) (moveResult, error) {
	ctx, cancel := wf.waitContext(parent)
	defer cancel()
	st, err := waitJoined(ctx, c, progress, wf.timeout, a, pid, joinSeq)
	if err != nil {
		return moveResult{}, err
	}
	res := moveResult{Table: a.table, Partition: pid, From: a.from, To: a.to, TxnSeq: st.txnSeq, Complete: true}
	fmt.Fprintln(progress, moveServesLine(a, pid, st))
	if !st.fromListed {
		return res, nil
	}
	var left api.ChangeResponse
	if err := c.postDecode(parent, partitionPath(a.table, pid)+"/leave", api.ServerChangeRequest{Server: a.from}, &left); err != nil {
		return moveResult{}, &requestError{fmt.Errorf("%s serves partition %s of %s, but removing %s failed: %w; %s is still a server "+
			"of it: retry with 'tsdb admin leave %s %s %s'", a.to, pid, a.table, a.from, err, a.from, a.table,
			prefix(pid.String(), shortPartition), a.from)}
	}
	res.TxnSeq, res.left = left.TxnSeq, true
	return res, nil
}

// postDecode posts v to path and decodes the answer into out.
func (c *adminClient) postDecode(ctx context.Context, path string, v, out any) error {
	body, err := c.post(ctx, path, v)
	if err != nil {
		return err
	}
	return c.decode(body, out)
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
func waitJoined(ctx context.Context, c *adminClient, out io.Writer, timeout time.Duration, a moveArgs, pid uuid.UUID,
	joinSeq uint64) (joinState, error) {
	w := &waiter{c: c, out: out, timeout: timeout,
		subject: fmt.Sprintf("move of partition %s of %s from %s to %s", pid, a.table, a.from, a.to),
		after: fmt.Sprintf("%s goes on joining in the background and %s was not removed: once %s is listed among the partition's "+
			"servers ('tsdb admin partitions %s'), run 'tsdb admin leave %s %s %s'", a.to, a.from, a.to, a.table, a.table,
			prefix(pid.String(), shortPartition), a.from)}
	path := "/api/v1/tables/" + url.PathEscape(a.table) + "/metadata"
	var final joinState
	err := w.run(ctx, func(ctx context.Context) (bool, error) {
		var resp api.MetadataResponse
		if !w.read(ctx, "the METADATA", path, &resp) {
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
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	ctx := cmdContext(cmd)
	pid, err := c.resolvePartition(ctx, table, arg)
	if err != nil {
		return err
	}
	verb := "/online"
	if offline {
		verb = "/offline"
	}
	body, err := c.post(ctx, partitionPath(table, pid)+verb, struct{}{})
	if err != nil {
		return err
	}
	var resp api.ChangeResponse
	if err := c.decode(body, &resp); err != nil {
		return err
	}
	if f.json {
		return printIndented(cmd.OutOrStdout(), body)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), offlineLine(table, pid, resp, offline))
	return err
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
	wf.register(cmd.Flags(), "exit once the request is recorded, without waiting for the replicas to be balanced",
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
	if err := wf.check(); err != nil {
		return err
	}
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	parent := cmdContext(cmd)
	var res rebalanceResult
	if err := c.postDecode(parent, rebalancePath, struct{}{}, &res.Rebalance); err != nil {
		return err
	}
	progress := progressWriter(cmd, f)
	fmt.Fprintln(progress, rebalanceStartedLine(res.Rebalance, wf.noWait))
	if !wf.noWait {
		ctx, cancel := wf.waitContext(parent)
		defer cancel()
		h, err := waitBalanced(ctx, c, progress, wf.timeout)
		if err != nil {
			return err
		}
		res.Health = &h
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), res)
	}
	if wf.noWait {
		return nil
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "balanced: every live, non-draining server holds within one of the mean (%.1f)\n",
		res.Health.Mean)
	return err
}

// waitBalanced polls the cluster health until it says balanced.
func waitBalanced(ctx context.Context, c *adminClient, out io.Writer, timeout time.Duration) (api.HealthResponse, error) {
	w := &waiter{c: c, out: out, timeout: timeout, subject: "rebalance",
		after: "the rebalance goes on in the background: follow it with 'tsdb admin stale'"}
	var final api.HealthResponse
	err := w.run(ctx, func(ctx context.Context) (bool, error) {
		var h api.HealthResponse
		if !w.read(ctx, "the cluster health", healthPath, &h) {
			return false, nil
		}
		w.report(countsLine(h))
		final = h
		return h.Balanced, nil
	})
	return final, err
}

// waiter polls the cluster's state for a command that waits, printing a
// progress line each time it changes (a failed read is one too).
type waiter struct {
	c   *adminClient
	out io.Writer
	// timeout is --wait-timeout, for the error message.
	timeout time.Duration
	// subject names what is awaited in the error of a wait cut short, and
	// after says what happens then and what to do.
	subject, after string
	// last is the last progress line printed.
	last string
	// lastErr is the last failed read, for the error of a wait cut short.
	lastErr error
}

// run calls step at once and then every opsPollInterval until it says
// done or fails, or until ctx ends: it then returns the *requestError of
// a wait cut short.
func (w *waiter) run(ctx context.Context, step func(context.Context) (bool, error)) error {
	tick := time.NewTicker(opsPollInterval)
	defer tick.Stop()
	for {
		if done, err := step(ctx); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return w.stopped(ctx)
		case <-tick.C:
		}
	}
}

// read GETs path into v. A failed read is reported and retried at the
// next poll: it returns false (silently once ctx has ended).
func (w *waiter) read(ctx context.Context, what, path string, v any) bool {
	body, err := w.c.get(ctx, path, nil)
	if err == nil {
		err = w.c.decode(body, v)
	}
	if err != nil {
		if ctx.Err() == nil {
			w.lastErr = err
			w.report(fmt.Sprintf("waiting: cannot read %s: %v", what, err))
		}
		return false
	}
	w.lastErr = nil
	return true
}

// report prints line unless it is the last one printed.
func (w *waiter) report(line string) {
	if line != w.last {
		w.last = line
		fmt.Fprintln(w.out, line)
	}
}

// stopped is the error of a wait cut short by --wait-timeout or an
// interrupt.
func (w *waiter) stopped(ctx context.Context) error {
	how := "wait interrupted"
	if errors.Is(context.Cause(ctx), errOpsWaitTimeout) {
		how = fmt.Sprintf("not finished after %v (--wait-timeout)", w.timeout)
	}
	return &requestError{fmt.Errorf("%s: %s%s; %s", w.subject, how, w.lastState(), w.after)}
}

// lastState is what a wait cut short last saw, for its error: the last
// failed read, else the last progress line, in parentheses.
func (w *waiter) lastState() string {
	switch {
	case w.lastErr != nil:
		return fmt.Sprintf(" (last read: %v)", w.lastErr)
	case w.last != "":
		return fmt.Sprintf(" (last seen: %s)", strings.TrimPrefix(w.last, "waiting: "))
	}
	return ""
}
