package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The skeleton of the admin commands that change the cluster. runChange
// runs those that ask for a change and then, unless --no-wait, wait until
// the cluster has made it (drain, rebalance, move, split): check the
// arguments, make the request, print that it was accepted, wait polling
// the cluster's state through a waiter, print the outcome. runNow runs
// those the cluster makes at once (join, leave, offline, online,
// undrain). Each command keeps only what it has of its own: its arguments'
// check, its request, its wait step and its lines.

// defaultOpsWaitTimeout is the default --wait-timeout of drain, move and
// rebalance: moving replicas copies their rows, which takes a while.
const defaultOpsWaitTimeout = 30 * time.Minute

// opsPollInterval is how often the commands that wait read the cluster's
// state. A variable so that tests can shorten it.
var opsPollInterval = 500 * time.Millisecond

// errOpsWaitTimeout is the cause of a wait's context when --wait-timeout
// passes, to tell it from an interrupt.
var errOpsWaitTimeout = errors.New("operator wait timed out")

// waitFlags are the flags of the commands that wait for the cluster.
type waitFlags struct {
	noWait  bool
	timeout time.Duration
}

// register adds --no-wait and --wait-timeout (default timeout) with their
// descriptions.
func (wf *waitFlags) register(fs *pflag.FlagSet, timeout time.Duration, noWaitUsage, timeoutUsage string) {
	fs.BoolVar(&wf.noWait, "no-wait", false, noWaitUsage)
	fs.DurationVar(&wf.timeout, "wait-timeout", timeout, timeoutUsage)
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

// change is what one of the commands run by runChange has of its own.
type change struct {
	// check, when set, is the usage check of the arguments, before any
	// request (the wait flags' check follows it).
	check func() error
	// start makes the request and returns the progress line saying it was
	// accepted.
	start func(ctx context.Context, c *adminClient) (string, error)
	// wait polls the cluster's state through w until the change is made;
	// ctx ends after --wait-timeout or on an interrupt.
	wait func(ctx context.Context, w *waiter) error
	// result is the JSON value --json prints at the end, done the line
	// printed without --json once the change is made.
	result func() any
	done   func() string

	// Split's own. whole: --wait-timeout bounds the whole command, its
	// requests included (each is bounded by it rather than by --timeout,
	// and each read while waiting by pollReadTimeout). answer, when set,
	// is the server's answer to start, which --json prints at once
	// (indented, on stdout) in place of the progress line; result is then
	// printed only after a wait.
	whole  bool
	answer func() []byte
}

// pollReadTimeout bounds one read while waiting in a command whose
// requests --timeout does not bound: a read that hangs is given up and
// retried at the next poll.
const pollReadTimeout = defaultTimeout

// runChange runs op: it checks the arguments and flags, makes op's request,
// prints its progress line (stdout, or stderr with --json), and unless
// --no-wait waits for the change, then prints op's JSON value (--json) or
// its final line.
func runChange(cmd *cobra.Command, f *adminFlags, wf waitFlags, op change) error {
	if op.check != nil {
		if err := op.check(); err != nil {
			return err
		}
	}
	if err := wf.check(); err != nil {
		return err
	}
	c, err := f.client(cmd)
	if err == nil && op.whole {
		c, err = c.withTimeout(wf.timeout)
	}
	if err != nil {
		return err
	}
	ctx := cmdContext(cmd)
	w := &waiter{c: c, out: progressWriter(cmd, f), timeout: wf.timeout}
	if op.whole {
		var cancel context.CancelFunc
		ctx, cancel = wf.waitContext(ctx)
		defer cancel()
		w.readTimeout = pollReadTimeout
	}
	line, err := op.start(ctx, c)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.json && op.answer != nil {
		if err := printIndented(out, op.answer()); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w.out, line)
	}
	if wf.noWait {
		if f.json && op.answer == nil {
			return printJSON(out, op.result())
		}
		return nil
	}
	if err := waitChange(ctx, wf, op, w); err != nil {
		return err
	}
	if f.json {
		return printJSON(out, op.result())
	}
	_, err = fmt.Fprintln(out, op.done())
	return err
}

// waitChange runs op's wait, bounded by --wait-timeout unless the whole
// command already is.
func waitChange(ctx context.Context, wf waitFlags, op change, w *waiter) error {
	if !op.whole {
		var cancel context.CancelFunc
		ctx, cancel = wf.waitContext(ctx)
		defer cancel()
	}
	return op.wait(ctx, w)
}

// runNow runs a change the cluster makes at once (join, leave, offline,
// online, undrain): request makes it and returns the server's answer.
// --json prints the answer, indented; otherwise line(the answer decoded as
// a T) is printed. checked: the answer must decode as a T even with --json
// (offline, online and undrain check it; join and leave print it as it is).
func runNow[T any](cmd *cobra.Command, f *adminFlags, checked bool, request func(context.Context, *adminClient) ([]byte, error),
	line func(T) string) error {
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	body, err := request(cmdContext(cmd), c)
	if err != nil {
		return err
	}
	var resp T
	if checked || !f.json {
		if err := c.decode(body, &resp); err != nil {
			return err
		}
	}
	if f.json {
		return printIndented(cmd.OutOrStdout(), body)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), line(resp))
	return err
}

// waiter polls the cluster's state for a command that waits, printing a
// progress line each time it changes (a failed read is one too), and makes
// the error of a wait cut short.
type waiter struct {
	c   *adminClient
	out io.Writer
	// timeout is --wait-timeout, for the error message; readTimeout, when
	// not 0, bounds each read (the client's timeout bounds it otherwise).
	timeout, readTimeout time.Duration
	// subject names what is awaited in the error of a wait cut short, and
	// after says what happens then and what to do. interrupted and
	// unfinished say how it was cut short ("wait interrupted" and "not
	// finished" when empty).
	subject, after          string
	interrupted, unfinished string
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

// read makes one read of w's wait with get (what names what it reads). A
// failed read is reported and retried at the next poll: ok is false
// (silently once ctx has ended).
func read[T any](ctx context.Context, w *waiter, what string, get func(context.Context) (T, error)) (v T, ok bool) {
	rctx := ctx
	if w.readTimeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, w.readTimeout)
		defer cancel()
	}
	v, err := get(rctx)
	if err != nil {
		if ctx.Err() == nil {
			w.lastErr = w.c.fail(err)
			w.report(fmt.Sprintf("waiting: cannot read %s: %v", what, w.lastErr))
		}
		return v, false
	}
	w.lastErr = nil
	return v, true
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
	how := cmp.Or(w.interrupted, "wait interrupted")
	if errors.Is(context.Cause(ctx), errOpsWaitTimeout) {
		how = fmt.Sprintf("%s after %v (--wait-timeout)", cmp.Or(w.unfinished, "not finished"), w.timeout)
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
