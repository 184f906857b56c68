#pragma once

// The CSV that PrairieLearn's manual grading upload reads (an assessment's "Uploads" tab, "Upload
// new question scores"): one row per submission with uid, qid, score_perc and feedback. A grade
// computed where the GPU is (a cluster) reaches a platform whose graders have none.

#include <string>
#include <vector>

#include "report/class_outputs.hpp"

namespace grader {

// uid is the submission's folder (PrairieLearn's export names it by the student's uid), qid the
// question the scores go to. score_perc is the score over max_score in percent; an ungradable
// submission's is left blank, which PrairieLearn reads as "leave the score as it is". feedback is
// the verdict, the score and why, as Markdown (PrairieLearn renders it), each field RFC 4180.
std::string write_prairielearn_scores_csv(const std::vector<ClassEntry>& entries,
                                          const std::string& qid);

}  // namespace grader
