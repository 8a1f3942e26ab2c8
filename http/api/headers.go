package api

import (
	"fmt"
	"strings"
)

// ParseSmearHeader reads the X-TSDB-Smear header of an insert (DESIGN.md
// section 7): "off" (or "false", "0", "no") opts the insert out of
// smearing; "on" (or "true", "1", "yes"), empty or absent leaves the
// decision to the table and the server. Case and surrounding spaces do not
// matter. Any other value is an error naming the header, which the server
// answers 400: a value it does not recognise ("disable") is refused rather
// than guessed.
func ParseSmearHeader(value string) (noSmear bool, err error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "on", "true", "1", "yes":
		return false, nil
	case "off", "false", "0", "no":
		return true, nil
	}
	return false, fmt.Errorf("header %s: %q (want off or on)", HeaderSmear, value)
}
