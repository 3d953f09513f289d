package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	"chat/models/regular"
)

// hashLimit is the largest model file Identity hashes. Course checkpoints
// are a few MB; hashing a multi-GB GGUF would cost seconds on every start,
// so big files are known by their size.
const hashLimit = 64 << 20

// Identity tells whether a session was held with the same model file:
// "sha256:<hex>" for files up to 64 MiB, "size:<bytes>" above.
func Identity(path string) (string, error) {
	f, st, err := regular.Open(path)
	if err != nil {
		return "", fmt.Errorf("model identity: %w", err)
	}
	defer f.Close()
	if st.Size() > hashLimit {
		return "size:" + strconv.FormatInt(st.Size(), 10), nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("model identity: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// IdentityOf is Identity for a model held in memory (the embedded one).
func IdentityOf(data []byte) string {
	if len(data) > hashLimit {
		return "size:" + strconv.Itoa(len(data))
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
