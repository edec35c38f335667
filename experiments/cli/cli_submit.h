// `isim sweep submit` and `isim plan submit`: a sweep or plan as a Slurm job array or a
// Kubernetes Indexed Job, each task one shard (`--shard auto --resume`), and a merge job after
// them. Below, VERB is sweep or plan; a plan's merge is `isim plan merge SPEC OUT/shards --out
// OUT -p ...` (its journals are OUT/shards/plan-shard-K-of-N.jsonl).
//
// Contract:
// - Slurm (--slurm): writes OUT/submit/VERB-array.sbatch (`#SBATCH --array=0-(N-1)`, each task
//   running `isim sweep SPEC --shard auto --resume --out OUT [--jobs J] [-p ...]`, logs in
//   OUT/submit/logs/; the script exports ISIM_SHARDS=N, so a task resubmitted alone knows N)
//   and OUT/submit/VERB-merge.sbatch (`isim sweep merge OUT/results.csv OUT/shards`). Paths are
//   made absolute, and isim is this program's own path, so the scripts run from any folder of a
//   shared filesystem. --partition, --time, --mem become #SBATCH lines. With --now it runs `sbatch
//   --parsable` on the array, then on the merge with
//   `--dependency=afterok:ID`, and prints "submitted array job ID (N tasks)" and "submitted
//   merge job ID2 (after ID)". A task that dies is resumed by submitting it again
//   (`sbatch --array=T OUT/submit/VERB-array.sbatch`): it keeps the runs its journal holds.
// - Kubernetes (--k8s): writes OUT/submit/VERB-job.yaml, a batch/v1 Job with completionMode
//   Indexed, completions = parallelism = N, env ISIM_SHARDS=N, the image --image, and the claim
//   --pvc (default isim-work) mounted at --workdir (default /work), its working directory; and
//   OUT/submit/VERB-merge-job.yaml, the merge as a plain Job. SPEC and OUT are used as given:
//   they are paths inside the container, relative to --workdir. Names are DNS-1123 labels made
//   from the spec's name.
// - Bad input (no --slurm/--k8s, both, --tasks not in 1..100000, --k8s without --image, a spec
//   that does not load, sbatch missing or failing with --now) is exit 2 with the reason.
#pragma once

#include <string>

#include "experiments/cli/cli.h"

namespace isim::exp {

// verb: "sweep" or "plan". args: what follows `isim sweep submit`.
int cmd_submit(const std::string& verb, const Args& args);

// A word quoted for a POSIX shell: unchanged when it is only [A-Za-z0-9_./=:,+@%-], else in
// single quotes (a ' inside as '\'').
std::string shell_quote(const std::string& word);
// A DNS-1123 label from `name`: lowercase, [a-z0-9-], at most 40 characters (so that
// "isim-sweep-NAME-merge" is a valid Job name), starting and ending with an alphanumeric
// ("isim" when nothing is left).
std::string dns_label(const std::string& name);

}  // namespace isim::exp
