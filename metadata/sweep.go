package metadata

import "time"

// SweepListed is Sweep against tables, the TableConfigs listed in etcd
// (Store.ListTables) just before: a table the list names has the
// committed txnid it records, and one it does not name is known not to
// exist. tables must be a complete listing (not one cut short by an
// error).
func (s *FileStore) SweepListed(now time.Time, grace time.Duration, keep int, tables []TableConfig) (deleted int, err error) {
	current := make(map[string]string, len(tables))
	for _, t := range tables {
		current[t.Name] = t.MetadataTxnID
	}
	return s.Sweep(now, grace, keep, func(table string) (string, bool) {
		id, ok := current[table]
		return id, ok
	})
}
