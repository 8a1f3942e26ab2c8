package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/http/api"
)

// shortTxn is how many hex digits of a txnid the tables listing shows.
const shortTxn = 12

// shortPlacement is how many characters of a placement id are shown.
const shortPlacement = 8

// printTables writes one row per table.
func printTables(w io.Writer, tables []api.TableConfig) error {
	if len(tables) == 0 {
		_, err := fmt.Fprintln(w, "no tables")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRF\tTXNSEQ\tTXNID\tMETADATA SERVERS\tCREATED")
	for _, t := range tables {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", t.Name, t.ReplicationFactor, t.MetadataTxnSeq,
			orDash(prefix(t.MetadataTxnID, shortTxn)), orDash(strings.Join(t.MetadataServers, ",")),
			t.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// printMetadata writes the TableConfig as indented JSON, then the decoded
// METADATA file: its header and one line per partition.
func printMetadata(w io.Writer, resp api.MetadataResponse) error {
	if err := printJSON(w, resp.Config); err != nil {
		return err
	}
	f := resp.Metadata
	if f == nil {
		_, err := fmt.Fprintln(w, "\nMETADATA: none")
		return err
	}
	fmt.Fprintf(w, "\nMETADATA:\n  table:   %s\n  txnid:   %s\n  txnseq:  %d\n  parent:  %s\n  partitions: %d\n\n",
		f.Table, f.TxnID, f.TxnSeq, orDash(f.ParentTxnID), len(f.Partitions))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tBEGIN\tEND\tSERVERS\tJOINING\tSPLIT\tOFFLINE")
	for _, p := range f.Partitions {
		offline := "-"
		if p.Offline {
			offline = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, bound(p.Begin, "-inf"), bound(p.End, "+inf"),
			orDash(placements(p.Servers)), orDash(placements(p.Joining)), splitText(p.Split), offline)
	}
	return tw.Flush()
}

// bound formats a range bound as RFC 3339 (UTC, nanoseconds when needed),
// or open for an open end.
func bound(b *int64, open string) string {
	if b == nil {
		return open
	}
	return time.Unix(0, *b).UTC().Format(time.RFC3339Nano)
}

// placements formats servers as "id(placement-id prefix)", comma-separated.
func placements(ps []api.Placement) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s(%s)", p.ServerID, prefix(p.PlacementID.String(), shortPlacement))
	}
	return strings.Join(parts, ",")
}

// splitText formats a split in progress: each child's id, range and
// servers, separated by " | ".
func splitText(s *api.Split) string {
	if s == nil {
		return "-"
	}
	parts := make([]string, len(s.Children))
	for i, c := range s.Children {
		parts[i] = fmt.Sprintf("%s [%s, %s) %s", c.ID, bound(c.Begin, "-inf"), bound(c.End, "+inf"), orDash(placements(c.Servers)))
	}
	return fmt.Sprintf("%d children: %s", len(s.Children), strings.Join(parts, " | "))
}

func prefix(s string, n int) string {
	return s[:min(len(s), n)]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printServers writes one row per server.
func printServers(w io.Writer, servers []api.ServerInfo) error {
	if len(servers) == 0 {
		_, err := fmt.Fprintln(w, "no servers")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tADDR\tSTARTED\tREPLICAS\tBYTES\tINSERT ROWS/S\tSMEAR QUEUE ROWS\tSMEAR QUEUE BYTES")
	for _, s := range servers {
		started := "-"
		if !s.StartedAt.IsZero() {
			started = s.StartedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.0f\t%d\t%d\n", s.ID, serverRole(s), orDash(s.Addr), started, s.Replicas, s.Bytes,
			s.InsertRowsPerSec, s.SmearQueueRows, s.SmearQueueBytes)
	}
	return tw.Flush()
}

// serverRole is a server's ROLE column: "master", "draining" (an operator
// is draining it), both comma-separated, or "-".
func serverRole(s api.ServerInfo) string {
	var roles []string
	if s.Master {
		roles = append(roles, "master")
	}
	if s.Draining {
		roles = append(roles, "draining")
	}
	return orDash(strings.Join(roles, ","))
}

// printPartitions writes one block per partition: a line with its id, range
// and flags, then one line per replica, and one per listed placement that
// did not report.
func printPartitions(w io.Writer, resp api.TableReplicasResponse) error {
	if len(resp.Partitions) == 0 {
		_, err := fmt.Fprintf(w, "table %s has no partitions\n", resp.Config.Name)
		return err
	}
	for i, p := range resp.Partitions {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := printPartition(w, p); err != nil {
			return err
		}
	}
	return nil
}

func printPartition(w io.Writer, p api.PartitionReplicas) error {
	head := fmt.Sprintf("partition %s  [%s, %s)", p.ID, bound(p.Begin, "-inf"), bound(p.End, "+inf"))
	if p.Split != nil {
		head += fmt.Sprintf("  splitting into %d", len(p.Split.Children))
	}
	if p.Offline {
		head += "  offline"
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SERVER\tROLE\tPLACEMENT\tSTATUS\tROWS\tBYTES\tHIGH SEQ\tLOG START\tLOG LEN\tSNAPSHOTS\tTARGETS\tMOVED ROWS/BYTES")
	reported := make(map[uuid.UUID]bool, len(p.Replicas))
	for _, r := range p.Replicas {
		reported[r.Placement] = true
		rows := "-"
		if r.Rows >= 0 {
			rows = fmt.Sprint(r.Rows)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Server, role(p.Partition, r.Placement),
			prefix(r.Placement.String(), shortPlacement), orDash(string(r.Status)), rows, r.Bytes, r.HighSeq,
			r.LogStart, r.LogLength, snapshotsText(r.Snapshots), targets(r.Targets), movedText(r.Moved))
	}
	for _, list := range [][]api.Placement{p.Servers, p.Joining} {
		for _, pl := range list {
			if !reported[pl.PlacementID] {
				fmt.Fprintf(tw, "  %s\t%s\t%s\tno report\t-\t-\t-\t-\t-\t-\t-\t-\n", pl.ServerID, role(p.Partition, pl.PlacementID),
					prefix(pl.PlacementID.String(), shortPlacement))
			}
		}
	}
	return tw.Flush()
}

// role names a placement's place in the partition's METADATA entry.
func role(p api.Partition, placement uuid.UUID) string {
	for _, pl := range p.Servers {
		if pl.PlacementID == placement {
			return "server"
		}
	}
	for _, pl := range p.Joining {
		if pl.PlacementID == placement {
			return "joining"
		}
	}
	return "-"
}

// targets formats a replica's replication targets as "→server:lag",
// space-separated.
func targets(ts []api.TargetStatus) string {
	if len(ts) == 0 {
		return "-"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("→%s:%d", t.Server, t.Lag)
	}
	return strings.Join(parts, " ")
}

// snapshotsText formats a replica's row snapshots as "1 running, 3 done,
// 1 failed, 2 dropped", leaving out the zero counts ("-" if all are).
func snapshotsText(c api.SnapshotCounts) string {
	var parts []string
	for _, n := range []struct {
		n    uint64
		what string
	}{{uint64(max(c.Active, 0)), "running"}, {c.Done, "done"}, {c.Failed, "failed"}, {c.Dropped, "dropped"}} {
		if n.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	return orDash(strings.Join(parts, ", "))
}

// movedText formats what a replica's pushes moved as "kind rows/bytes" per
// kind that moved anything (push, snapshot, split, join), comma-separated:
// "push 1.2k/64KiB, snapshot 300/12KiB".
func movedText(m map[string]api.Moved) string {
	var parts []string
	for _, k := range []string{api.MovedPush, api.MovedSnapshot, api.MovedSplit, api.MovedJoin} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %s/%s", k, humanCount(v.Rows), humanBytes(v.Bytes)))
		}
	}
	return orDash(strings.Join(parts, ", "))
}

// humanCount formats n with an SI suffix and one decimal above 1000:
// 999, 1.2k, 3.4M, 5G.
func humanCount(n uint64) string {
	return humanize(n, 1000, []string{"", "k", "M", "G", "T"})
}

// humanBytes formats a byte count in powers of 1024: 512B, 64KiB, 3.4MiB.
func humanBytes(n uint64) string {
	return humanize(n, 1024, []string{"B", "KiB", "MiB", "GiB", "TiB"})
}

// humanize divides n by base while it is at least base (up to the last
// unit) and prints it with one decimal when not whole.
func humanize(n, base uint64, units []string) string {
	if n < base {
		return fmt.Sprintf("%d%s", n, units[0])
	}
	v, i := float64(n), 0
	// >= base-0.05: a value that would print as "1024.0" moves up a unit.
	for v >= float64(base)-0.05 && i < len(units)-1 {
		v /= float64(base)
		i++
	}
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0") + units[i]
}
