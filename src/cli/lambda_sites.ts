/**
 * `vid lambda sites create|list|rm`: the uploaded projects in the render bucket.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { deploySite } from "../lambda/sdk.ts";
import { listSites, removeSite } from "../lambda/sites.ts";
import { connection, ENV_HELP, fail } from "./lambda_connection.ts";
import { OPTIONS } from "../request/options.ts";
import { cliOptionWithDefault } from "./request_flags.ts";

/** Registers `vid lambda sites`. */
export function registerLambdaSites(lambda: Command): void {
  const sites = lambda.command("sites").description(
    "Upload, list and remove the projects (sites) in the render bucket",
  );
  sites
    .command("create")
    .summary("Upload the project once; prints its content-addressed Site ID.")
    .description(
      "Upload the project once under its content address; prints the Site ID. An unchanged " +
        "project uploads nothing." + ENV_HELP,
    )
    .argument("<projectDir>", "project directory")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (projectDir, options) => {
      try {
        const conn = connection(options);
        const site = await deploySite({
          projectDir,
          composition: options.composition,
          bucketName: conn.bucket(),
          s3: conn.s3,
        });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...site }, null, 2));
        } else {
          if (!site.uploaded) console.error(`site ${site.siteId} already uploaded`);
          if (site.playerCors) console.error(`warning: ${site.playerCors}`);
          console.log(site.siteId);
        }
      } catch (error) {
        fail(error, options.json);
      }
    });

  sites
    .command("list")
    .summary("List the sites in the render bucket, newest first.")
    .description(
      "List the sites uploaded to the render bucket, newest first: site id, upload time, " +
        "files, size and entry. A site whose upload never finished shows as incomplete." +
        ENV_HELP,
    )
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        const conn = connection(options);
        const list = await listSites(conn.bucket(), { s3: conn.s3 });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, sites: list }, null, 2));
        } else if (list.length === 0) {
          console.error("no sites in the bucket; upload one with `vid lambda sites create`");
        } else {
          for (const site of list) {
            const when = site.created ?? "incomplete";
            console.log(
              `${site.siteId}  ${when}  ${site.files} files  ${site.bytes} bytes  ` +
                `${site.composition ?? "-"}`,
            );
          }
        }
      } catch (error) {
        fail(error, options.json);
      }
    });

  sites
    .command("rm")
    .summary("Delete sites from the render bucket.")
    .description(
      "Delete every object of the given sites from the render bucket (site.json first, so a " +
        "half-deleted site is never used). Renders already started from a site may fail; " +
        "their finished outputs are kept." + ENV_HELP,
    )
    .argument("<siteIds...>", "site ids, as `vid lambda sites list` prints them")
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (siteIds, options) => {
      try {
        const conn = connection(options);
        const bucketName = conn.bucket();
        const removed: { siteId: string; objects: number }[] = [];
        for (const siteId of siteIds) {
          removed.push({ siteId, objects: await removeSite(siteId, bucketName, { s3: conn.s3 }) });
          if (!options.json) console.log(`removed ${siteId} (${removed.at(-1)!.objects} objects)`);
        }
        if (options.json) console.log(JSON.stringify({ ok: true, removed }, null, 2));
      } catch (error) {
        fail(error, options.json);
      }
    });
}
