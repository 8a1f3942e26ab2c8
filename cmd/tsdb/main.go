// Command tsdb is the one binary of tsdb: `tsdb server` runs a server,
// `tsdb dev` runs a whole local cluster (embedded etcd plus servers on
// loopback), `tsdb admin` inspects a running cluster over HTTP. It only parses flags, builds components and runs them until a
// signal; the logic lives in the packages it wires.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "tsdb: %v\n", err)
		stop()
		os.Exit(exitCode(err))
	}
}

// exitCode is the process status for a command's error: 1 when a request
// of `tsdb admin` failed (the server refused it or could not be reached),
// 2 for a usage error or a server that could not run.
func exitCode(err error) int {
	var re *requestError
	if errors.As(err, &re) {
		return 1
	}
	return 2
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tsdb",
		Short: "tsdb: a distributed time-series storage engine",
		Long: `tsdb stores time-series rows in range-partitioned tables.

  tsdb dev      start a local cluster: embedded etcd plus servers on loopback
  tsdb server   run one server against an etcd cluster
  tsdb admin    inspect a running cluster (servers, tables, partitions and
                their replicas, METADATA files, problems); join, leave, move,
                split, offline or online a partition; drain a server;
                rebalance
  tsdb loadtest send inserts (hot or over a time range) to a running
                cluster or to a local one it starts, and report throughput,
                latency, per-server share of stored writes and visibility
                delay; --compare measures smear off against smear on

Run 'tsdb COMMAND --help' for a command's flags.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w (see '%s --help')", c.CommandPath(), err, c.CommandPath())
	})
	root.AddCommand(newServerCmd(), newDevCmd(), newAdminCmd(), newLoadtestCmd(), newVersionCmd())
	return root
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "tsdb", version)
		},
	}
}
