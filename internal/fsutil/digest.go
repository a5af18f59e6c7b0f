package fsutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// FileSHA256 returns the lowercase hex SHA256 and the size of a regular
// file (anything else is refused, as OpenRegular does).
func FileSHA256(path string) (string, int64, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// BytesSHA256 returns the lowercase hex SHA256 of b.
func BytesSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
