// Package objstore is how kubox's components reach an S3-compatible object store (AWS S3, MinIO,
// SeaweedFS, Ceph RGW, a cloud's S3 API): one configuration, the flags that set it under the
// prefix each component chooses, and a client whose credentials come from files (a mounted
// Secret's keys), never from a flag's value.
package objstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/spf13/pflag"
)

// Config says which bucket of which store to use, and where the credentials are.
type Config struct {
	Endpoint string // host:port of the S3 API
	Bucket   string
	// Prefix is the folder of the bucket the user keeps its objects under ("": the bucket's root).
	Prefix string
	// Region is the bucket's region ("": asked of the endpoint).
	Region string
	// Insecure talks plain HTTP to the endpoint instead of TLS.
	Insecure bool
	// AccessKeyIDFile and SecretAccessKeyFile hold the credentials (a mounted Secret's keys).
	AccessKeyIDFile, SecretAccessKeyFile string

	// flag is the prefix of the flags AddFlags added ("" when the Config was not set by flags),
	// so that errors name the flag to fix.
	flag string
}

// Flags describes the flags AddFlags adds.
type Flags struct {
	// Name prefixes every flag: Name "audit-s3" gives --audit-s3-endpoint, --audit-s3-bucket, ...
	Name string
	// When opens every flag's help: the setting that makes the flags count ("with --audit-sink=s3").
	When string
	// Bucket and Prefix end the help of --<Name>-bucket and --<Name>-prefix: what the bucket and
	// the folder are for.
	Bucket, Prefix string
	// Insecure ends the help of --<Name>-insecure ("" for none).
	Insecure string
}

// AddFlags adds the flags that set c.
func (c *Config) AddFlags(f *pflag.FlagSet, fl Flags) {
	c.flag = fl.Name
	n, w := fl.Name, fl.When
	f.StringVar(&c.Endpoint, n+"-endpoint", "", w+", host:port of the S3 API (AWS S3, MinIO, SeaweedFS, Ceph RGW, ...)")
	f.StringVar(&c.Bucket, n+"-bucket", "", w+", "+fl.Bucket)
	f.StringVar(&c.Prefix, n+"-prefix", "", w+", "+fl.Prefix)
	f.StringVar(&c.Region, n+"-region", "", w+", the bucket's region; empty: asked of the endpoint")
	f.BoolVar(&c.Insecure, n+"-insecure", false, w+", talk plain HTTP to the endpoint instead of TLS"+fl.Insecure)
	f.StringVar(&c.AccessKeyIDFile, n+"-access-key-id-file", "", w+", file holding the access key id (a mounted Secret's key)")
	f.StringVar(&c.SecretAccessKeyFile, n+"-secret-access-key-file", "", w+", file holding the secret access key (a mounted Secret's key)")
}

// Client returns a client of c's endpoint with the credentials its files hold; what names the
// user in errors ("the S3 audit sink").
func (c Config) Client(what string) (*minio.Client, error) {
	if c.Endpoint == "" || c.Bucket == "" {
		return nil, fmt.Errorf("%s needs an endpoint and a bucket%s", what, c.flags("endpoint", "bucket"))
	}
	id, err := readCredential(what, "access key id", c.AccessKeyIDFile, c.flags("access-key-id-file"))
	if err != nil {
		return nil, err
	}
	secret, err := readCredential(what, "secret access key", c.SecretAccessKeyFile, c.flags("secret-access-key-file"))
	if err != nil {
		return nil, err
	}
	cl, err := minio.New(c.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(id, secret, ""),
		Secure: !c.Insecure,
		Region: c.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("%s's endpoint %q: %w", what, c.Endpoint, err)
	}
	return cl, nil
}

// flags names c's flags with these suffixes, " (--x-endpoint, --x-bucket)", or "" when c was
// not set by flags.
func (c Config) flags(suffixes ...string) string {
	if c.flag == "" {
		return ""
	}
	s := " ("
	for i, x := range suffixes {
		if i > 0 {
			s += ", "
		}
		s += "--" + c.flag + "-" + x
	}
	return s + ")"
}

func readCredential(what, key, file, flag string) (string, error) {
	if file == "" {
		return "", fmt.Errorf("%s needs a file holding its %s%s, a mounted Secret's key", what, key, flag)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s's %s%s: %w", what, key, flag, err)
	}
	v := string(bytes.TrimSpace(b))
	if v == "" {
		return "", errors.New(what + "'s " + key + " file " + file + " is empty" + flag)
	}
	return v, nil
}
