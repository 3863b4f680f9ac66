//go:build windows

package platform

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

var memFileSeq atomic.Uint64

// MemFile is a scratch file that vanishes when closed: a temporary file the system
// deletes once its last handle closes.
func MemFile(name string) (*os.File, error) {
	path := filepath.Join(os.TempDir(), "refretry-"+name+"-"+
		strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(memFileSeq.Add(1), 10)+"-"+
		strconv.FormatInt(time.Now().UnixNano(), 36))
	p, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	const (
		fileAttributeTemporary = 0x100      // FILE_ATTRIBUTE_TEMPORARY
		deleteOnClose          = 0x04000000 // FILE_FLAG_DELETE_ON_CLOSE
	)
	h, err := syscall.CreateFile(p, syscall.GENERIC_READ|syscall.GENERIC_WRITE,
		syscall.FILE_SHARE_READ|syscall.FILE_SHARE_WRITE|syscall.FILE_SHARE_DELETE, nil,
		syscall.CREATE_NEW, fileAttributeTemporary|deleteOnClose, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
