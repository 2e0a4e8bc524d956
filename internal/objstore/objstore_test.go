package objstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

// TestClientErrors: a configuration without its settings is an error naming the user, what is
// missing and, when flags set it, the flag to give.
func TestClientErrors(t *testing.T) {
	dir := t.TempDir()
	id := writeFile(t, dir, "id", "AKID\n")
	empty := writeFile(t, dir, "empty", "")
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"no endpoint": {args: []string{"--x-s3-bucket=b"},
			want: []string{"the S3 thing needs an endpoint and a bucket (--x-s3-endpoint, --x-s3-bucket)"}},
		"no bucket": {args: []string{"--x-s3-endpoint=s3.example.com"},
			want: []string{"needs an endpoint and a bucket", "--x-s3-bucket"}},
		"no key id file": {args: []string{"--x-s3-endpoint=s3.example.com", "--x-s3-bucket=b"},
			want: []string{"needs a file holding its access key id (--x-s3-access-key-id-file)"}},
		"no secret file": {args: []string{"--x-s3-endpoint=127.0.0.1:1", "--x-s3-bucket=b", "--x-s3-access-key-id-file=" + id},
			want: []string{"secret access key (--x-s3-secret-access-key-file)"}},
		"missing id file": {args: []string{"--x-s3-endpoint=127.0.0.1:1", "--x-s3-bucket=b", "--x-s3-access-key-id-file=" + filepath.Join(dir, "nope"), "--x-s3-secret-access-key-file=" + id},
			want: []string{"access key id", filepath.Join(dir, "nope")}},
		"empty secret file": {args: []string{"--x-s3-endpoint=127.0.0.1:1", "--x-s3-bucket=b", "--x-s3-access-key-id-file=" + id, "--x-s3-secret-access-key-file=" + empty},
			want: []string{"secret access key file " + empty + " is empty (--x-s3-secret-access-key-file)"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := parse(t, tc.args...)
			_, err := c.Client("the S3 thing")
			if err == nil {
				t.Fatal("Client: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Client: %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}

// TestClientWithoutFlags: a Config built in code names no flag.
func TestClientWithoutFlags(t *testing.T) {
	_, err := Config{Endpoint: "s3.example.com"}.Client("the S3 thing")
	if diff := cmp.Diff("the S3 thing needs an endpoint and a bucket", errString(err)); diff != "" {
		t.Error(diff)
	}
}

// TestFlagsSetConfig: every flag lands in its field, and the client has the credentials.
func TestFlagsSetConfig(t *testing.T) {
	dir := t.TempDir()
	id, secret := writeFile(t, dir, "id", " AKID\n"), writeFile(t, dir, "secret", "SECRET")
	c := parse(t, "--x-s3-endpoint=127.0.0.1:9000", "--x-s3-bucket=b", "--x-s3-prefix=p/q", "--x-s3-region=eu-1",
		"--x-s3-insecure", "--x-s3-access-key-id-file="+id, "--x-s3-secret-access-key-file="+secret)
	want := Config{Endpoint: "127.0.0.1:9000", Bucket: "b", Prefix: "p/q", Region: "eu-1", Insecure: true,
		AccessKeyIDFile: id, SecretAccessKeyFile: secret, flag: "x-s3"}
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
	cl, err := c.Client("the S3 thing")
	if err != nil {
		t.Fatal(err)
	}
	v, err := cl.GetCreds()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"AKID", "SECRET", "http"}, []string{v.AccessKeyID, v.SecretAccessKey, cl.EndpointURL().Scheme}); diff != "" {
		t.Errorf("credentials and scheme (-want +got):\n%s", diff)
	}
}

func parse(t *testing.T, args ...string) Config {
	t.Helper()
	var c Config
	f := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.AddFlags(f, Flags{Name: "x-s3", When: "with --x=s3", Bucket: "the bucket", Prefix: "the folder"})
	if err := f.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
