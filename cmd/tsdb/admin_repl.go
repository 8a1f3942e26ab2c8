package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tsdb/tsdb/http/api"
)

func newAdminServersCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "servers",
		Short: "List the live servers: id, master, address, start time, local replicas",
		Long: `List the live servers of the cluster (GET /api/v1/cluster): id, role (the
elected master, a server being drained, or -), address, start time and the
number of partition replicas each holds. --json prints the servers as the
API describes them ("master": true on the master, "draining": true on a
server being drained).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd, f, liveServers, printServers)
		},
	}
}

// liveServers lists the live servers ([] rather than null when there is
// none).
func liveServers(c *api.Client, ctx context.Context) ([]api.ServerInfo, error) {
	resp, err := c.Cluster(ctx)
	if resp.Servers == nil {
		resp.Servers = []api.ServerInfo{}
	}
	return resp.Servers, err
}

func newAdminPartitionsCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "partitions TABLE",
		Short: "Show each partition of a table with its replicas' state and replication lag",
		Long: `Show each partition of a table (GET /api/v1/tables/{t}?replicas=1): a block per
partition with its id and range, then one line per replica: server, role in
the METADATA (server, joining, or - for a replica no longer listed), placement
id prefix, discovery status, live rows, bytes, highest sequence, the log's
truncation point (LOG START: the log holds the entries above it, 0 if never
truncated) and length (LOG LEN: highest sequence minus LOG START), its row
snapshots to targets below the truncation point (running, done, failed,
dropped), for each replication target "→server:lag" (lag: rows of sequence
the target has not confirmed), and what its confirmed pushes moved since the
server started it, as "kind rows/bytes" by kind: push (to a replica, from the
log), snapshot (from a row snapshot), split (to a split child, from the log),
join (to a joining replica, from the log); bytes are encoded rows before
compression. The same counts for the whole server, and their rates, are the
metrics tsdb_moved_rows_total, tsdb_moved_bytes_total, tsdb_snapshots_total
and tsdb_snapshot_seconds. A listed server that did not report is shown as
"no report".
--json prints the server's answer, indented.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showAnswer(cmd, f, api.TablePath(args[0]), url.Values{"replicas": {"1"}}, printPartitions)
		},
	}
}

func newAdminJoinCmd(f *adminFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "join TABLE PARTITION SERVER",
		Short: "Add a server to a partition (JOIN_SERVER, or FORCE_JOIN with --force)",
		Long: `Add SERVER to a partition of TABLE (POST /api/v1/tables/{t}/partitions/{p}/join)
and print the METADATA transaction (txnid, txnseq) that did it. The server
joins as "joining": it receives every row from the partition's servers and
starts serving once it has caught up with a majority of them.

PARTITION is a partition id or a prefix of one that only one current
partition of the table has (see 'tsdb admin partitions TABLE'); an unknown
or ambiguous prefix exits with status 1.

--force is FORCE_JOIN, for a partition that has lost every replica: the
server goes straight into the partition's servers, with no data.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return serverChange(cmd, f, args, true, api.ServerChangeRequest{Server: args[2], Force: force})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false,
		"FORCE_JOIN: put the server straight into the servers of a partition whose replicas are all gone")
	return cmd
}

func newAdminLeaveCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "leave TABLE PARTITION SERVER",
		Short: "Remove a server from a partition (REMOVE_SERVER)",
		Long: `Remove SERVER from a partition of TABLE (POST /api/v1/tables/{t}/partitions/{p}/leave)
and print the METADATA transaction (txnid, txnseq) that did it. The server
first pushes the rows the others lack, then drops its copy. The change is
refused while it would leave fewer replicas than the replication factor.

PARTITION is a partition id or a prefix of one that only one current
partition of the table has (see 'tsdb admin partitions TABLE'); an unknown
or ambiguous prefix exits with status 1.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return serverChange(cmd, f, args, false, api.ServerChangeRequest{Server: args[2]})
		},
	}
}

// serverChange runs join or leave: args are TABLE PARTITION SERVER.
func serverChange(cmd *cobra.Command, f *adminFlags, args []string, join bool, req api.ServerChangeRequest) error {
	table, arg := args[0], args[1]
	if err := checkServerArg("SERVER", req.Server); err != nil {
		return err
	}
	verb, op := "leave", "REMOVE_SERVER"
	switch {
	case join && req.Force:
		verb, op = "join", "FORCE_JOIN"
	case join:
		verb, op = "join", "JOIN_SERVER"
	}
	var pid uuid.UUID
	return runNow(cmd, f, false, func(ctx context.Context, c *adminClient) (body []byte, err error) {
		if pid, err = c.resolvePartition(ctx, table, arg); err != nil {
			return nil, err
		}
		return c.post(ctx, api.PartitionPath(table, pid)+"/"+verb, req)
	}, func(resp api.ChangeResponse) string {
		return fmt.Sprintf("%s %s, partition %s of %s: committed txnid %s txnseq %d",
			op, req.Server, pid, table, resp.TxnID, resp.TxnSeq)
	})
}

// resolvePartition returns the partition arg names: a full partition id as
// it is (the server checks it), or the one current partition of table whose
// id starts with arg (case-insensitive, dashes included as printed).
func (c *adminClient) resolvePartition(ctx context.Context, table, arg string) (uuid.UUID, error) {
	if id, err := uuid.Parse(arg); err == nil {
		return id, nil
	}
	p := strings.ToLower(arg)
	if p == "" || strings.Trim(p, "0123456789abcdef-") != "" {
		return uuid.Nil, fmt.Errorf("PARTITION %q: want a partition id or the start of one (hex digits and dashes)", arg)
	}
	resp, err := c.api.Table(ctx, table)
	if err != nil {
		return uuid.Nil, c.fail(err)
	}
	var matches []uuid.UUID
	for _, part := range resp.Partitions {
		if strings.HasPrefix(part.ID.String(), p) {
			matches = append(matches, part.ID)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return uuid.Nil, &requestError{fmt.Errorf("table %q has no partition whose id starts with %q (see 'tsdb admin partitions %s')",
			table, arg, table)}
	}
	ids := make([]string, len(matches))
	for i, m := range matches {
		ids[i] = m.String()
	}
	return uuid.Nil, &requestError{fmt.Errorf("partition %q of table %q is ambiguous: %d partitions start with it (%s); give more digits",
		arg, table, len(matches), strings.Join(ids, ", "))}
}
