package metadata_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// newStoreFunc returns an empty Store; prefix "" means the default.
type newStoreFunc func(t *testing.T, prefix string) metadata.Store

func TestMemStoreConformance(t *testing.T) {
	runStoreConformance(t, func(*testing.T, string) metadata.Store { return metadata.NewMemStore() })
}

func TestEtcdStoreConformance(t *testing.T) {
	cli := startEtcd(t)
	n := 0
	runStoreConformance(t, func(t *testing.T, prefix string) metadata.Store {
		if prefix == "" {
			n++ // one etcd for all cases: each gets its own prefix
			prefix = fmt.Sprintf("/conformance%d/", n)
		}
		return metadata.NewEtcdStore(cli, prefix)
	})
	t.Run("raw value at /tsdb/tables/<name>", func(t *testing.T) {
		ctx := testCtx(t)
		s := metadata.NewEtcdStore(cli, "")
		cfg := tableConfig("rawcheck")
		cfg.MetadataServers = []string{"s1", "s2"}
		cfg.Retention = metadata.Duration(24 * time.Hour)
		if err := s.CreateTable(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Get(ctx, "/tsdb/tables/rawcheck")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw get: %v, %d kvs", err, len(resp.Kvs))
		}
		var m map[string]any
		if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
			t.Fatalf("value is not JSON: %v: %s", err, resp.Kvs[0].Value)
		}
		want := []string{"created_at", "metadata_checksum", "metadata_servers", "metadata_txnid", "metadata_txnseq",
			"name", "partition_size_target", "replication_factor", "retention", "smear"}
		if got := sortedKeys(m); !reflect.DeepEqual(got, want) {
			t.Fatalf("fields %v, want %v", got, want)
		}
		smear, _ := m["smear"].(map[string]any)
		if got := sortedKeys(smear); !reflect.DeepEqual(got, []string{"enabled", "keyrange_threshold", "max_delay"}) {
			t.Fatalf("smear fields %v", got)
		}
		if m["name"] != "rawcheck" || m["metadata_txnid"] != cfg.MetadataTxnID || m["metadata_txnseq"] != float64(1) ||
			m["replication_factor"] != float64(3) || m["retention"] != "24h0m0s" || smear["max_delay"] != "2m0s" ||
			!reflect.DeepEqual(m["metadata_servers"], []any{"s1", "s2"}) {
			t.Fatalf("values: %s", resp.Kvs[0].Value)
		}
	})
}

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// tableConfig returns a valid config as a created table would have it.
func tableConfig(name string) metadata.TableConfig {
	cfg := metadata.NewTableConfig(name)
	cfg.MetadataTxnID = metadata.NewTxnID()
	cfg.MetadataTxnSeq = 1
	cfg.MetadataChecksum = "sha256:00"
	cfg.MetadataServers = []string{"s1"}
	cfg.CreatedAt = time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	return cfg
}

func runStoreConformance(t *testing.T, newStore newStoreFunc) {
	t.Run("create and get", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		cfg := tableConfig("cpu")
		if err := s.CreateTable(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		got, rev, err := s.GetTable(ctx, "cpu")
		if err != nil || rev <= 0 {
			t.Fatalf("GetTable: rev %d, %v", rev, err)
		}
		if !reflect.DeepEqual(got, cfg) {
			t.Fatalf("got %+v\nwant %+v", got, cfg)
		}
	})
	t.Run("create twice", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		if err := s.CreateTable(ctx, tableConfig("cpu")); err != nil {
			t.Fatal(err)
		}
		second := tableConfig("cpu")
		if err := s.CreateTable(ctx, second); !errors.Is(err, metadata.ErrTableExists) {
			t.Fatalf("second create: %v", err)
		}
		if got, _, _ := s.GetTable(ctx, "cpu"); got.MetadataTxnID == second.MetadataTxnID {
			t.Fatal("the second create overwrote the first")
		}
	})
	t.Run("get missing", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		if _, _, err := s.GetTable(ctx, "nope"); !errors.Is(err, metadata.ErrTableNotFound) {
			t.Fatalf("got %v", err)
		}
		_, _, err := s.GetTable(ctx, "../x")
		if !errors.Is(err, metadata.ErrTableNotFound) || !errors.Is(err, model.ErrInvalidTable) {
			t.Fatalf("bad name: %v", err)
		}
	})
	t.Run("CAS", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		cfg := tableConfig("cpu")
		if err := s.CreateTable(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		_, rev, err := s.GetTable(ctx, "cpu")
		if err != nil {
			t.Fatal(err)
		}
		next := cfg
		next.MetadataTxnID, next.MetadataTxnSeq = metadata.NewTxnID(), 2
		if err := s.UpdateTable(ctx, next, rev); err != nil {
			t.Fatalf("CAS at the current revision: %v", err)
		}
		got, rev2, err := s.GetTable(ctx, "cpu")
		if err != nil || rev2 <= rev || got.MetadataTxnID != next.MetadataTxnID || got.MetadataTxnSeq != 2 {
			t.Fatalf("after CAS: %+v rev %d→%d, %v", got, rev, rev2, err)
		}
		stale := cfg
		stale.MetadataTxnID, stale.MetadataTxnSeq = metadata.NewTxnID(), 2
		if err := s.UpdateTable(ctx, stale, rev); !errors.Is(err, metadata.ErrConflict) {
			t.Fatalf("stale CAS: %v", err)
		}
		if got, _, _ := s.GetTable(ctx, "cpu"); got.MetadataTxnID != next.MetadataTxnID {
			t.Fatal("a stale CAS changed the value")
		}
		// Rewriting the same value still moves the revision.
		if err := s.UpdateTable(ctx, next, rev2); err != nil {
			t.Fatal(err)
		}
		if _, rev3, _ := s.GetTable(ctx, "cpu"); rev3 <= rev2 {
			t.Fatalf("revision did not move: %d → %d", rev2, rev3)
		}
	})
	t.Run("delete is a CAS", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		cfg := tableConfig("gone")
		if err := s.CreateTable(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		_, rev, err := s.GetTable(ctx, "gone")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTable(ctx, "gone", rev+1000); !errors.Is(err, metadata.ErrConflict) {
			t.Fatalf("delete at a wrong revision: %v", err)
		}
		if err := s.DeleteTable(ctx, "gone", rev); err != nil {
			t.Fatalf("delete at the current revision: %v", err)
		}
		if _, _, err := s.GetTable(ctx, "gone"); !errors.Is(err, metadata.ErrTableNotFound) {
			t.Fatalf("after delete: %v", err)
		}
		if err := s.DeleteTable(ctx, "gone", rev); !errors.Is(err, metadata.ErrConflict) {
			t.Fatalf("delete of a deleted table: %v", err)
		}
		if err := s.CreateTable(ctx, cfg); err != nil {
			t.Fatalf("re-create after delete: %v", err)
		}
	})
	t.Run("CAS on a missing table", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		for _, rev := range []int64{0, 1, 1000} {
			if err := s.UpdateTable(ctx, tableConfig("ghost"), rev); !errors.Is(err, metadata.ErrConflict) {
				t.Fatalf("rev %d: %v", rev, err)
			}
		}
		if _, _, err := s.GetTable(ctx, "ghost"); !errors.Is(err, metadata.ErrTableNotFound) {
			t.Fatalf("a CAS created the table: %v", err)
		}
	})
	t.Run("list sorted", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		if got, err := s.ListTables(ctx); err != nil || len(got) != 0 {
			t.Fatalf("empty list: %v, %v", got, err)
		}
		for _, name := range []string{"mem", "cpu", "disk_io", "cpu2"} {
			if err := s.CreateTable(ctx, tableConfig(name)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.ListTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if want := []string{"cpu", "cpu2", "disk_io", "mem"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("names %v, want %v", names, want)
		}
	})
	t.Run("invalid config refused", func(t *testing.T) {
		ctx, s := testCtx(t), newStore(t, "")
		bad := tableConfig("cpu")
		bad.ReplicationFactor = 0
		if err := s.CreateTable(ctx, bad); !errors.Is(err, metadata.ErrInvalidConfig) {
			t.Fatalf("create: %v", err)
		}
		if err := s.CreateTable(ctx, tableConfig("cpu")); err != nil {
			t.Fatal(err)
		}
		_, rev, _ := s.GetTable(ctx, "cpu")
		if err := s.UpdateTable(ctx, bad, rev); !errors.Is(err, metadata.ErrInvalidConfig) {
			t.Fatalf("update: %v", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		s := newStore(t, "")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := s.GetTable(ctx, "cpu"); err == nil || errors.Is(err, metadata.ErrTableNotFound) {
			t.Fatalf("GetTable: %v", err)
		}
		if err := s.CreateTable(ctx, tableConfig("cpu")); err == nil {
			t.Fatal("CreateTable succeeded on a cancelled context")
		}
	})
}
