package model

// FieldKey is a field name of a measurement and the kind of its values
// (InfluxQL's SHOW FIELD KEYS), as partition.Replica.FieldKeys answers it.
// Its JSON form travels in the answer of an internal meta sub-query.
type FieldKey struct {
	Measurement string `json:"measurement"`
	Name        string `json:"name"`
	Kind        Kind   `json:"kind"`
}
