package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/model"
)

func newAdminRetentionCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "retention TABLE DURATION",
		Short: "Change a table's retention (0 keeps data forever)",
		Long: `Change a table's retention (PATCH /api/v1/tables/{t}): DURATION is like
"30d", "2w", "720h" or 0 (keep forever). Queries stop answering rows older
than it as soon as the servers see the new config; the master drops the
partitions that end before now - retention at its next tick.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := model.ParseDuration(args[1])
			if err != nil {
				return err
			}
			c, err := f.client(cmd)
			if err != nil {
				return err
			}
			r := api.Duration(d)
			cfg, err := c.api.PatchTable(cmd.Context(), args[0], api.PatchTableRequest{Retention: &r})
			if err != nil {
				return c.fail(err)
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), cfg)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "table %s: retention %s\n", cfg.Name, cfg.Retention)
			return err
		},
	}
}

func newAdminDropTableCmd(f *adminFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "drop-table TABLE",
		Short: "Drop a table: its partitions on every server, its config, its METADATA files",
		Long: `Drop a table (DELETE /api/v1/tables/{t}). Every row of it is deleted; the
name can be created again at once. Refused while a partition of the table
splits, unless --force.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(cmd)
			if err != nil {
				return err
			}
			if err := c.api.DropTable(cmd.Context(), args[0], force); err != nil {
				return c.fail(err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "table %s dropped\n", args[0])
			return err
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "drop the table even while a partition splits")
	return cmd
}
