//go:build unix && !linux

package platform

import "os"

// MemFile is a scratch file that vanishes when closed: here a temporary file,
// removed at once.
func MemFile(name string) (*os.File, error) {
	f, err := os.CreateTemp("", "refretry-"+name+"-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}
