package ci

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/refretry/refretry/internal/platform"
)

// stepOutput is one GitHub step output.
type stepOutput struct{ Name, Value string }

// writeOutputs appends step outputs to the GitHub output file at path, each as
// "name<<DELIMITER", the value, "DELIMITER", with a delimiter drawn from random that
// neither the name nor the value contains; all of them with one write, under flock.
func writeOutputs(path string, random io.Reader, outs []stepOutput) error {
	var b strings.Builder
	for _, o := range outs {
		delim, err := delimiter(random, o)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", o.Name, delim, o.Value, delim)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("step outputs: %w", err)
	}
	defer f.Close()
	if err := platform.Lock(f, true); err != nil && !errors.Is(err, platform.ErrUnsupported) {
		return fmt.Errorf("step outputs: locking: %w", err)
	}
	defer platform.Unlock(f)
	if _, err := f.WriteString(b.String()); err != nil {
		return fmt.Errorf("step outputs: %w", err)
	}
	return nil
}

func delimiter(random io.Reader, o stepOutput) (string, error) {
	for {
		tok, err := token(random)
		if err != nil {
			return "", err
		}
		d := "REFRETRY_EOF_" + tok
		if !strings.Contains(o.Value, d) && !strings.Contains(o.Name, d) {
			return d, nil
		}
	}
}

// token is 128 random bits in hex.
func token(random io.Reader) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
