package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/internal/tlsconfig"
)

// Defaults of the admin flags.
const (
	defaultServer  = "http://127.0.0.1:8080"
	serverEnv      = "TSDB_SERVER"
	defaultTimeout = 10 * time.Second
	// maxAnswerBytes bounds an answer the admin commands read.
	maxAnswerBytes = 256 << 20
)

// requestError is a failed admin request: the server refused it or could
// not be reached, or its answer did not allow the command to go on (a
// partition prefix no partition or several partitions have). main exits
// with status 1 for it (2 is for usage errors).
type requestError struct{ err error }

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// adminFlags are the persistent flags of `tsdb admin`.
type adminFlags struct {
	server    string
	tokenFile string
	caFile    string // --tls-ca-file
	timeout   time.Duration
	json      bool
}

func newAdminCmd() *cobra.Command {
	var f adminFlags
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Inspect and operate a running cluster through a server's HTTP API: partitions, splits, moves, drains, problems",
		Long: `Inspect a running cluster (servers, tables, partitions and their replicas,
METADATA files), add a server to a partition or remove one from it, and
split a partition, through the public HTTP API of any one of its servers
(--server, or the ` + serverEnv + ` environment variable).

The operator's tools: 'stale' lists the cluster's problems (exit status 1
if any); 'drain' moves every partition replica off a server so that it can
be stopped ('undrain' undoes it); 'move' moves one partition replica from a
server to another; 'offline' takes a partition out of service and 'online'
brings it back; 'rebalance' asks the master to even out the replicas. Every
manual action stays visible (in the METADATA, and in 'stale') until undone.

A refused request prints the server's error message and exits with status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.server, "server", defaultServer, "URL of any tsdb server of the cluster; $"+serverEnv+" when the flag is not given")
	pf.StringVar(&f.tokenFile, "auth-token-file", "", "file holding the bearer token the server requires, if any")
	pf.StringVar(&f.caFile, "tls-ca-file", "", "PEM CA certificates an https --server's certificate must chain to (default: the system's roots)")
	pf.DurationVar(&f.timeout, "timeout", defaultTimeout, "time limit of each request")
	pf.BoolVar(&f.json, "json", false, "print the server's answer as indented JSON instead of a table")
	cmd.AddCommand(newAdminServersCmd(&f), newAdminTablesCmd(&f), newAdminPartitionsCmd(&f), newAdminMetadataCmd(&f),
		newAdminJoinCmd(&f), newAdminLeaveCmd(&f), newAdminSplitCmd(&f),
		newAdminStaleCmd(&f), newAdminDrainCmd(&f), newAdminUndrainCmd(&f), newAdminMoveCmd(&f),
		newAdminOfflineCmd(&f, true), newAdminOfflineCmd(&f, false), newAdminRebalanceCmd(&f),
		newAdminRetentionCmd(&f), newAdminDropTableCmd(&f))
	return cmd
}

func newAdminTablesCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "tables",
		Short: "List the tables: replication factor, current METADATA transaction, metadata servers",
		Long: `List every table (GET /api/v1/tables) with its replication factor (RF), the
txnseq and txnid (first 12 hex digits) of its current METADATA transaction,
its metadata servers and its creation time. --json prints the TableConfigs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd, f, (*api.Client).ListTables, printTables)
		},
	}
}

func newAdminMetadataCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "metadata TABLE [TXNID]",
		Short: "Print a table's METADATA file (its partition map), decoded",
		Long: `Print a table's TableConfig and METADATA file (GET /api/v1/tables/{t}/metadata):
the current transaction's, or TXNID's while a metadata server still keeps it.
Each partition is one line: id, range (RFC 3339, -inf/+inf for an open end),
servers and joining servers as id(placement-id prefix), split children, and
whether it is offline. --json prints the server's answer, indented.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if len(args) == 2 {
				q.Set("txnid", args[1])
			}
			return showAnswer(cmd, f, api.TablePath(args[0])+"/metadata", q, printMetadata)
		},
	}
}

// show reads a value with get, a typed method of the API's client, and
// prints it: as JSON, indented, with --json, else with print.
func show[T any](cmd *cobra.Command, f *adminFlags, get func(*api.Client, context.Context) (T, error),
	print func(io.Writer, T) error) error {
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	v, err := get(c.api, cmd.Context())
	if err != nil {
		return c.fail(err)
	}
	if f.json {
		return printJSON(cmd.OutOrStdout(), v)
	}
	return print(cmd.OutOrStdout(), v)
}

// showAnswer reads path (with query q) and prints the server's answer:
// indented as it is with --json, else print(the decoded answer).
func showAnswer[T any](cmd *cobra.Command, f *adminFlags, path string, q url.Values, print func(io.Writer, T) error) error {
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	body, err := c.get(cmd.Context(), path, q)
	if err != nil {
		return err
	}
	if f.json {
		return printIndented(cmd.OutOrStdout(), body)
	}
	var resp T
	if err := c.decode(body, &resp); err != nil {
		return err
	}
	return print(cmd.OutOrStdout(), resp)
}

// adminClient makes the admin commands' requests through the API's client
// (http/api.Client): its typed methods where the command needs only the
// decoded answer, and get, post and do where it prints the server's answer
// as it is (--json). fail gives either the admin's error messages.
type adminClient struct {
	base string // the server URL, without a trailing slash
	opts api.Options
	api  *api.Client
}

// client checks the flags and builds the client. --server falls back on
// $TSDB_SERVER when it is not given.
func (f *adminFlags) client(cmd *cobra.Command) (*adminClient, error) {
	server := f.server
	if fl := cmd.Flags().Lookup("server"); (fl == nil || !fl.Changed) && os.Getenv(serverEnv) != "" {
		server = os.Getenv(serverEnv)
	}
	base, err := parseServerURL(server)
	if err != nil {
		return nil, err
	}
	if f.timeout <= 0 {
		return nil, fmt.Errorf("--timeout %v: want a positive duration", f.timeout)
	}
	token, err := readSecretFile("auth-token-file", f.tokenFile)
	if err != nil {
		return nil, err
	}
	// One attempt: a wait's poll shows each failed read and reads again
	// itself, and a refused change is the operator's to retry.
	opts := api.Options{Token: token, Timeout: f.timeout, Attempts: 1, MaxAnswerBytes: maxAnswerBytes}
	if f.caFile != "" {
		tc, err := tlsconfig.Client(f.caFile, "", "")
		if err != nil {
			return nil, fmt.Errorf("--tls-ca-file: %w", err)
		}
		opts.TLS = tc
	}
	return newAdminClient(base, opts)
}

// newAdminClient returns a client of base with opts.
func newAdminClient(base string, opts api.Options) (*adminClient, error) {
	c, err := api.NewClient(base, opts)
	if err != nil {
		return nil, err
	}
	return &adminClient{base: base, opts: opts, api: c}, nil
}

// withTimeout returns a client like c whose requests are bounded by d.
func (c *adminClient) withTimeout(d time.Duration) (*adminClient, error) {
	opts := c.opts
	opts.Timeout = d
	return newAdminClient(c.base, opts)
}

// parseServerURL checks a --server value: an http or https URL with a host.
func parseServerURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--server %q: want a URL such as %s", s, defaultServer)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// get fetches path and returns the body of a 2xx answer. Any failure is a
// *requestError (see fail).
func (c *adminClient) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, q, nil)
}

// post sends v as JSON to path and returns the body of a 2xx answer, with
// the errors of get.
func (c *adminClient) post(ctx context.Context, path string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return c.do(ctx, http.MethodPost, path, nil, body)
}

// do makes one request; body, when not nil, is sent as JSON.
func (c *adminClient) do(ctx context.Context, method, path string, q url.Values, body []byte) ([]byte, error) {
	r := api.Request{Method: method, Path: path, Query: q, Body: body}
	if body != nil {
		r.Header = http.Header{"Content-Type": {"application/json"}}
	}
	var answer []byte
	if err := c.api.Do(ctx, r, &answer); err != nil {
		return nil, c.fail(err)
	}
	return answer, nil
}

// decode decodes a 2xx answer; an undecodable one is a request error.
func (c *adminClient) decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return c.undecodable(err)
	}
	return nil
}

// fail turns an error of c.api into a *requestError with a one-line
// message: the server's own message for an error answer, or what went
// wrong reaching it or reading or decoding its answer.
func (c *adminClient) fail(err error) error {
	var (
		ae *api.Error
		re *api.ReadError
		de *api.DecodeError
	)
	switch {
	case errors.As(err, &ae):
		return &requestError{answerError(ae)}
	case errors.As(err, &re):
		return &requestError{fmt.Errorf("%s: reading the answer: %w", c.base, re.Err)}
	case errors.As(err, &de):
		return c.undecodable(de.Err)
	}
	return &requestError{c.transportError(err)}
}

// undecodable is the error of a 2xx answer that did not decode.
func (c *adminClient) undecodable(err error) error {
	return &requestError{fmt.Errorf("%s: undecodable answer: %w", c.base, err)}
}

// transportError names the server URL and, for the common cases, the
// likely cause in plain words.
func (c *adminClient) transportError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot connect to the tsdb server at %s: connection refused (is it running? set --server or $%s)", c.base, serverEnv)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("no answer from the tsdb server at %s within %v (--timeout)", c.base, c.api.Timeout())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its message repeats the whole URL
	}
	return fmt.Errorf("cannot reach the tsdb server at %s: %v", c.base, err)
}

// answerError is the error of a non-2xx answer: the server's message and
// code, or the start of a body that is not the API's JSON error.
func answerError(e *api.Error) error {
	if e.Message != "" {
		return fmt.Errorf("%s (HTTP %d, %s)", e.Message, e.Status, e.Code)
	}
	text := strings.Join(strings.Fields(string(e.Body[:min(len(e.Body), 200)])), " ")
	if text == "" {
		text = http.StatusText(e.Status)
	}
	return fmt.Errorf("HTTP %d: %s", e.Status, text)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func printIndented(w io.Writer, body []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return &requestError{fmt.Errorf("undecodable answer: %w", err)}
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(w)
	return err
}
