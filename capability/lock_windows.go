//go:build windows

package capability

// syncDir is a no-op: Windows cannot open a directory for syncing, and
// MoveFileEx (os.Rename) is already atomic on NTFS.
func syncDir(string) {}
