module github.com/refretry/refretry

go 1.25

require (
	github.com/alecthomas/kong v1.17.0
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/google/uuid v1.6.0
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.26.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/tools v0.26.0 // indirect
