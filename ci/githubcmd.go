package ci

import "strings"

// GitHub workflow commands are lines "::name key=value,key=value::data". The runner
// decodes %25, %0D and %0A in the data, and also %3A and %2C in property values; these
// functions encode exactly those characters, '%' first so that nothing is encoded
// twice.

var (
	dataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// escapeData encodes a workflow command's data.
func escapeData(s string) string { return dataEscaper.Replace(s) }

// escapeProperty encodes a workflow command's property value.
func escapeProperty(s string) string { return propertyEscaper.Replace(s) }

// workflowCommand formats one command line, newline included; props are key, value
// pairs in order.
func workflowCommand(name string, props [][2]string, data string) string {
	var b strings.Builder
	b.WriteString("::" + name)
	for i, p := range props {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(p[0] + "=" + escapeProperty(p[1]))
	}
	b.WriteString("::" + escapeData(data) + "\n")
	return b.String()
}

// githubPlain makes a plain (non-command) log line safe on GitHub: control characters
// become escapes, so the line cannot split into one that starts with "::", and the
// runner's older "##[name]" command form, which it finds anywhere in a line, is broken
// with a backslash.
func githubPlain(s string) string {
	return strings.ReplaceAll(printable(s), "##[", `##\[`)
}
