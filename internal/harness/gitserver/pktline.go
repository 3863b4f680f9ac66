package gitserver

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The pkt-line framing of git's protocols (gitprotocol-common(5)): four hex digits
// giving the packet's length, themselves included, then the data; "0000" is a flush
// packet. Inside a receive-pack answer with side-band-64k, each packet's first byte is
// its band: 1 carries the report-status packets (themselves pkt-lines, possibly split
// across several band-1 packets), 2 the messages the client prints as "remote: ", 3 a
// fatal error. A band-1 packet with no data ("0005\x01") is a keep-alive.

const (
	bandData     = 1
	bandMessage  = 2
	bandFatal    = 3
	maxPktLen    = 65520 // LARGE_PACKET_MAX, the length field included
	smallPktData = 1000 - 4 - 1
)

var errPkt = errors.New("malformed pkt-line")

// pkt is one packet: flush (length 0000), or data. delim is any other special length
// (0001 delim, 0002 response-end), kept for re-encoding.
type pkt struct {
	special int // -1 for a data packet, else the special length (0 flush, 1, 2)
	data    []byte
}

// readPkts splits b into packets. rest is what follows the last whole packet (a
// truncated packet, or nothing).
func readPkts(b []byte) (pkts []pkt, rest []byte) {
	for len(b) >= 4 {
		n, err := strconv.ParseUint(string(b[:4]), 16, 16)
		if err != nil {
			break
		}
		switch {
		case n < 4:
			pkts = append(pkts, pkt{special: int(n)})
			b = b[4:]
			continue
		case int(n) > len(b):
			return pkts, b
		}
		pkts = append(pkts, pkt{special: -1, data: b[4:n]})
		b = b[n:]
	}
	return pkts, b
}

// appendPkt appends data as one data packet.
func appendPkt(dst, data []byte) []byte {
	dst = fmt.Appendf(dst, "%04x", len(data)+4)
	return append(dst, data...)
}

func appendSpecial(dst []byte, n int) []byte { return fmt.Appendf(dst, "%04x", n) }

// appendBand appends data on band as many packets as it takes, each at most max bytes
// of data; an empty data appends nothing.
func appendBand(dst []byte, band byte, data []byte, max int) []byte {
	for len(data) > 0 {
		n := min(len(data), max)
		dst = fmt.Appendf(dst, "%04x%c", n+5, band)
		dst = append(dst, data[:n]...)
		data = data[n:]
	}
	return dst
}

// request is what a receive-pack POST asks for: its commands, in order, and the
// capabilities the client chose (from the first command's NUL-separated tail).
type request struct {
	commands []command
	caps     []string
}

type command struct{ old, new, ref string }

func (q request) has(capability string) bool {
	for _, c := range q.caps {
		if c == capability {
			return true
		}
	}
	return false
}

// sideband is the data size per packet of the side band the client asked for; 0 when
// it asked for none (the answer is then the bare report, and messages are lost).
func (q request) sideband() int {
	switch {
	case q.has("side-band-64k"):
		return maxPktLen - 5
	case q.has("side-band"):
		return smallPktData
	}
	return 0
}

// reports says whether the client asked for a report (report-status or its v2).
func (q request) reports() bool { return q.has("report-status") || q.has("report-status-v2") }

// parseRequest reads the commands from a receive-pack POST body: pkt-lines up to the
// first flush, each "<old> <new> <ref>" (the first with "\x00<capabilities>"), possibly
// after "shallow <oid>" lines. What follows (push options, the pack) is ignored. A
// signed push's certificate holds its commands as lines of the same shape, and they are
// read from it. A gzip-encoded body (Content-Encoding: gzip) is decoded first.
func parseRequest(body []byte, encoding string) (request, error) {
	if strings.EqualFold(encoding, "gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return request{}, fmt.Errorf("request body: %w", err)
		}
		// Only the commands are needed: they come first, and are small.
		body, err = io.ReadAll(io.LimitReader(zr, 1<<20))
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return request{}, fmt.Errorf("request body: %w", err)
		}
	}
	var q request
	for len(body) >= 4 {
		n, err := strconv.ParseUint(string(body[:4]), 16, 16)
		if err != nil || (n >= 1 && n < 4) || int(n) > len(body) {
			return q, fmt.Errorf("request body: %w", errPkt)
		}
		if n == 0 {
			if len(q.commands) == 0 {
				return q, errors.New("request body: no commands")
			}
			return q, nil
		}
		line := string(body[4:n])
		body = body[n:]
		line, caps, hasCaps := strings.Cut(line, "\x00")
		if hasCaps && q.caps == nil {
			q.caps = strings.Fields(caps)
		}
		for l := range strings.Lines(line) {
			if c, ok := parseCommand(strings.TrimSuffix(l, "\n")); ok {
				q.commands = append(q.commands, c)
			}
		}
	}
	return q, fmt.Errorf("request body: %w: no flush after the commands", errPkt)
}

// parseCommand reads "<old> <new> <ref>" with two hex object ids of one length.
func parseCommand(line string) (command, bool) {
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 || len(f[0]) != len(f[1]) || (len(f[0]) != 40 && len(f[0]) != 64) ||
		!isHex(f[0]) || !isHex(f[1]) || f[2] == "" {
		return command{}, false
	}
	return command{old: f[0], new: f[1], ref: f[2]}, true
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
