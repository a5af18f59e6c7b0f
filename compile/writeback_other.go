//go:build !linux

package compile

import "os"

func startWriteback(*os.File, int64, int64) {}
