package model

// FieldKey is one field of a measurement with its kind, as the tag index
// reports it (partition.Replica.FieldKeys; InfluxQL's SHOW FIELD KEYS).
type FieldKey struct {
	Measurement, Name string
	Kind              Kind
}
