package frontend

// Replaced at merge by helper "retention"'s drop of a table.

import (
	"context"
	"fmt"
)

// dropTable drops a table and all its data (helper "retention" defines it
// and what force means). Until then: not implemented.
func (fe *Frontend) dropTable(_ context.Context, name string, force bool) error {
	return fmt.Errorf("%w: dropping table %q (force %v) is not implemented yet", errUnavailable, name, force)
}
