package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/tables/tablebuild"
)

func newPublishCommand() *cobra.Command {
	var (
		opts tablebuild.PublishOptions
		prog string
	)
	var quiet bool
	cmd := &cobra.Command{
		Use:   "publish DIR DEST",
		Short: "Upload a built table set where nodes pull it, the manifest last",
		Long: `Publish uploads a directory built by "lut build" to DEST, where enrichd
nodes (tables.path: https://.../MANIFEST.json or s3://BUCKET/PREFIX/) pull
it. DEST is a local directory (or file:///PATH/), served to the nodes by a
web server, or s3://BUCKET/PREFIX/ on S3 or an S3-compatible store.

The order is safe for nodes polling at any moment:
  1. DIR is fully verified (as "lut verify DIR"): nothing is published
     from a directory that fails;
  2. every artifact and delta (lut build --delta) DEST lacks is uploaded;
     they are content-addressed (NAME-DIGEST.EXT), so one already there is
     skipped;
  3. the manifest is written last, atomically: a rename in a directory; on
     S3 a conditional write (If-Match the manifest seen at the start, or
     If-None-Match for the first), which fails, replacing nothing, if
     another publisher wrote the manifest meanwhile.

To roll back, publish the older build's directory again (its artifacts are
skipped if still there): nodes switch back at their next poll.

S3 credentials come from the AWS environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared credentials file
(AWS_PROFILE), or the instance role. The exit status is 1 on any failure.`,
		Example: `  lut build tables.yaml --out dist/
  lut publish dist/ /srv/www/tables/                    # served as https://host/tables/MANIFEST.json
  lut publish dist/ s3://acme-tables/prod/
  lut publish dist/ s3://tables/prod/ --s3-endpoint http://127.0.0.1:9000 --s3-path-style
  lut publish dist-previous/ s3://acme-tables/prod/     # roll back`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var meter *countMeter
			if !quiet {
				opts.Log = func(format string, a ...any) {
					if meter != nil {
						meter.clear() // the line is drawn again after
					}
					fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...)
				}
			}
			opts.Progress = func(done, total int, doneBytes, totalBytes int64) {
				if meter == nil {
					meter = newCountMeter(cmd.ErrOrStderr(), progressOn(cmd.ErrOrStderr(), prog), "artifacts", total, totalBytes)
					return
				}
				meter.stepTo(done, doneBytes)
			}
			res, err := tablebuild.Publish(cmd.Context(), args[0], args[1], opts)
			if meter != nil {
				meter.clear()
			}
			if err != nil {
				if errors.Is(err, tablebuild.ErrManifestChanged) {
					err = fmt.Errorf("%s: %w", args[1], err)
				}
				return &exitError{code: 1, msg: "publish: " + err.Error()}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: published (%d artifacts uploaded, %d already there)\n",
				res.Manifest, len(res.Uploaded), len(res.Skipped))
			return nil
		},
	}
	f := cmd.Flags()
	progressFlag(f, &prog, "progress on stderr (artifacts and bytes sent): auto (when a terminal), always or never")
	f.StringVar(&opts.S3Endpoint, "s3-endpoint", "", "S3-compatible store at `HOST:PORT` or URL (http://host:port without TLS); default AWS, or AWS_ENDPOINT_URL_S3")
	f.BoolVar(&opts.S3PathStyle, "s3-path-style", false, "address the bucket in the path (most S3-compatible stores), not the host name")
	f.StringVar(&opts.S3Region, "s3-region", "", "S3 `REGION` (default AWS_REGION)")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the summary")
	return cmd
}

func init() { extraCommands = append(extraCommands, newPublishCommand) }
