package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// callTimeout bounds one etcd call (a ctx deadline, when earlier, bounds
// it too).
const callTimeout = 5 * time.Second

// drainMark is the value of a drain key.
type drainMark struct {
	Since time.Time `json:"since"`
}

// rebalanceMark is the value of the rebalance key.
type rebalanceMark struct {
	RequestedAt time.Time `json:"requested_at"`
}

// DrainPrefix is the etcd prefix of the drain marks under prefix ("" means
// "/tsdb/").
func DrainPrefix(prefix string) string { return normalize(prefix) + "drain/" }

// RebalanceKey is the etcd key of the last rebalance request.
func RebalanceKey(prefix string) string { return normalize(prefix) + "rebalance" }

func normalize(prefix string) string {
	if prefix == "" {
		prefix = "/tsdb/"
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return prefix
}

// SetDraining marks server as draining from now (on) or clears the mark
// (off). Marking a server already marked keeps its original time. It
// returns the mark's time (zero when cleared).
func SetDraining(ctx context.Context, cli *clientv3.Client, prefix, server string, on bool, now time.Time) (time.Time, error) {
	if server == "" || strings.Contains(server, "/") {
		return time.Time{}, fmt.Errorf("operator: invalid server id %q", server)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	key := DrainPrefix(prefix) + server
	if !on {
		if _, err := cli.Delete(ctx, key); err != nil {
			return time.Time{}, fmt.Errorf("operator: clear the drain mark of %s: %w", server, err)
		}
		return time.Time{}, nil
	}
	val, err := json.Marshal(drainMark{Since: now.UTC()})
	if err != nil {
		return time.Time{}, err
	}
	// Create only if absent, so that a repeated drain keeps its time.
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return time.Time{}, fmt.Errorf("operator: mark %s draining: %w", server, err)
	}
	if resp.Succeeded {
		return now.UTC(), nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return now.UTC(), nil
	}
	var m drainMark
	if err := json.Unmarshal(kvs[0].Value, &m); err != nil {
		return now.UTC(), nil // an unreadable mark still marks the server
	}
	return m.Since, nil
}

// Draining returns the servers marked draining, with the time of each mark.
func Draining(ctx context.Context, cli *clientv3.Client, prefix string) (map[string]time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	p := DrainPrefix(prefix)
	resp, err := cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("operator: read the drain marks: %w", err)
	}
	out := make(map[string]time.Time, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var m drainMark
		_ = json.Unmarshal(kv.Value, &m) // an unreadable mark still marks the server
		out[strings.TrimPrefix(string(kv.Key), p)] = m.Since
	}
	return out, nil
}

// RequestRebalance records a rebalance request at now for the master.
func RequestRebalance(ctx context.Context, cli *clientv3.Client, prefix string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	val, err := json.Marshal(rebalanceMark{RequestedAt: now.UTC()})
	if err != nil {
		return err
	}
	if _, err := cli.Put(ctx, RebalanceKey(prefix), string(val)); err != nil {
		return fmt.Errorf("operator: record the rebalance request: %w", err)
	}
	return nil
}

// RebalanceRequest returns the etcd revision of the last rebalance request
// (0 if none was ever made): the master rebalances when it changes.
func RebalanceRequest(ctx context.Context, cli *clientv3.Client, prefix string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, RebalanceKey(prefix))
	if err != nil {
		return 0, fmt.Errorf("operator: read the rebalance request: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return resp.Kvs[0].ModRevision, nil
}
