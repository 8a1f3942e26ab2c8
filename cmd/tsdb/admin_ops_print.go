package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/http/api"
)

// shortPartition is how many characters of a partition id the operator's
// commands print (and suggest as the PARTITION of a follow-up command).
const shortPartition = 8

// printHealth writes the problems of h, one line each, then a summary.
func printHealth(w io.Writer, h api.HealthResponse) error {
	if len(h.Problems) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tTABLE\tPARTITION\tSERVER\tMESSAGE")
		for _, p := range h.Problems {
			part := "-"
			if p.Partition != nil {
				part = prefix(p.Partition.String(), shortPartition)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Kind, orDash(p.Table), part, orDash(p.Server), oneLine(p.Message))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, healthSummary(h))
	return err
}

// healthSummary is the last line of stale: the problems by kind, the live
// servers, the master and the balance, e.g. "no problems: 5 servers live,
// master s2, partitions balanced (mean 4.0)".
func healthSummary(h api.HealthResponse) string {
	head := "no problems"
	if len(h.Problems) > 0 {
		head = fmt.Sprintf("%s (%s)", plural(len(h.Problems), "problem", "problems"), problemKinds(h.Problems))
	}
	live := 0
	for _, s := range h.Servers {
		if s.Live {
			live++
		}
	}
	master := "no master"
	if id := masterID(h); id != "" {
		master = "master " + id
	}
	balance := "partitions balanced"
	if !h.Balanced {
		balance = "partitions not balanced"
	}
	return fmt.Sprintf("%s: %s live, %s, %s (mean %.1f)", head, plural(live, "server", "servers"), master, balance, h.Mean)
}

// problemKinds counts problems by kind: "1 draining, 2 under_replicated".
func problemKinds(ps []api.Problem) string {
	n := make(map[string]int)
	for _, p := range ps {
		n[p.Kind]++
	}
	kinds := make([]string, 0, len(n))
	for k := range n {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return strings.Join(parts, ", ")
}

// countsLine is rebalance's progress: each live server's (or listed dead
// server's) partition replicas, and the mean: "s1=5 s2=4(draining)
// s3=2(not live) (mean 4.5)".
func countsLine(h api.HealthResponse) string {
	parts := make([]string, 0, len(h.Servers))
	for _, s := range h.Servers {
		if !s.Live && s.Partitions == 0 {
			continue
		}
		part := fmt.Sprintf("%s=%d", s.ID, s.Partitions)
		if s.Draining {
			part += "(draining)"
		}
		if !s.Live {
			part += "(not live)"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		parts = append(parts, "no servers")
	}
	return fmt.Sprintf("%s (mean %.1f)%s", strings.Join(parts, " "), h.Mean, noMasterNote(h))
}

// noMasterNote explains, in a progress line, why nothing moves.
func noMasterNote(h api.HealthResponse) string {
	if masterID(h) != "" {
		return ""
	}
	return "; no master is elected: nothing moves until one is"
}

// masterID is the id of the master in h, or "".
func masterID(h api.HealthResponse) string {
	for _, s := range h.Servers {
		if s.Master {
			return s.ID
		}
	}
	return ""
}

// findServer returns the entry of server id.
func findServer(servers []api.ServerHealth, id string) (api.ServerHealth, bool) {
	for _, s := range servers {
		if s.ID == id {
			return s, true
		}
	}
	return api.ServerHealth{}, false
}

// drainStartedLine describes a drain mark just set.
func drainStartedLine(server string, r api.DrainResponse, noWait bool) string {
	since := ""
	if !r.Since.IsZero() {
		since = " since " + r.Since.UTC().Format(time.RFC3339)
	}
	line := fmt.Sprintf("%s is draining%s: the master moves its partition replicas to other servers", server, since)
	if noWait {
		line += fmt.Sprintf("; follow it with 'tsdb admin stale' ('tsdb admin undrain %s' cancels it)", server)
	}
	return line
}

// drainProgressLine is a drain's progress: "s3: 7 partition replicas left".
func drainProgressLine(sh api.ServerHealth, h api.HealthResponse) string {
	return fmt.Sprintf("%s: %s left%s", sh.ID, plural(sh.Partitions, "partition replica", "partition replicas"), noMasterNote(h))
}

// drainedLine ends a drain.
func drainedLine(server string) string {
	return fmt.Sprintf("%s drained: it holds no partition replicas and can be stopped; 'tsdb admin undrain %s' undoes the mark",
		server, server)
}

// moveJoinedLine describes the JOIN_SERVER of a move.
func moveJoinedLine(a moveArgs, pid uuid.UUID, txnSeq uint64, noWait bool) string {
	line := fmt.Sprintf("JOIN_SERVER %s, partition %s of %s: committed txnseq %d", a.to, pid, a.table, txnSeq)
	if noWait {
		return line + fmt.Sprintf("; once %s serves it (listed among its servers by 'tsdb admin partitions %s'), "+
			"run 'tsdb admin leave %s %s %s' to finish the move", a.to, a.table, a.table, prefix(pid.String(), shortPartition), a.from)
	}
	return line + fmt.Sprintf("; %s is removed once %s has caught up", a.from, a.to)
}

// moveServesLine says TO serves the partition.
func moveServesLine(a moveArgs, pid uuid.UUID, st joinState) string {
	line := fmt.Sprintf("%s serves partition %s of %s (txnseq %d)", a.to, pid, a.table, st.txnSeq)
	if !st.fromListed {
		line += fmt.Sprintf("; %s already left it: nothing to remove", a.from)
	}
	return line
}

// moveDoneLine ends a move.
func moveDoneLine(r moveResult) string {
	line := fmt.Sprintf("moved partition %s of %s from %s to %s", r.Partition, r.Table, r.From, r.To)
	if !r.left {
		return line + fmt.Sprintf(" (txnseq %d)", r.TxnSeq)
	}
	return line + fmt.Sprintf(": REMOVE_SERVER %s committed txnseq %d; %s pushes what the others lack, then drops its copy",
		r.From, r.TxnSeq, r.From)
}

// offlineLine describes a partition taken offline or back online.
func offlineLine(table string, pid uuid.UUID, r api.ChangeResponse, offline bool) string {
	short := prefix(pid.String(), shortPartition)
	if offline {
		return fmt.Sprintf("partition %s of %s is offline (txnseq %d): inserts into its range and queries of it fail "+
			"with 503 %s until 'tsdb admin online %s %s'", short, table, r.TxnSeq, api.CodeOffline, table, short)
	}
	return fmt.Sprintf("partition %s of %s is online (txnseq %d): inserts into its range and queries of it are served again",
		short, table, r.TxnSeq)
}

// rebalanceStartedLine describes a recorded rebalance request.
func rebalanceStartedLine(r api.RebalanceResponse, noWait bool) string {
	at := ""
	if !r.RequestedAt.IsZero() {
		at = " at " + r.RequestedAt.UTC().Format(time.RFC3339)
	}
	line := "rebalance requested" + at + ": the master moves partition replicas until every live, non-draining server " +
		"holds within one of the mean"
	if noWait {
		line += "; follow it with 'tsdb admin stale'"
	}
	return line
}

// plural is "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// oneLine joins the lines of a server's message, for a table cell.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
