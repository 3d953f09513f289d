//go:build !unix

package regular

import (
	"errors"
	"os"
)

// readPipe refuses pipes where they cannot be read through a poller with a
// deadline.
func readPipe(*os.File, int64) ([]byte, error) {
	return nil, errors.New("is a pipe, which is not read on this system")
}
