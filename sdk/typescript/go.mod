// This file only keeps sdk/typescript out of the repository's root Go module: some npm packages
// in node_modules ship Go sources (flatted, which eslint uses, does), and `go list ./...`, go vet
// and golangci-lint in the root module would otherwise take them for the repository's own.
module github.com/kubox-dev/kubox/sdk/typescript

go 1.26.0
