<?php
// What Moodle's gradebook holds for the course of an LTI run (scripts/moodle/lti-moodle.sh): per
// student, each LTI activity's grade and when Moodle wrote it, as JSON.
//
//   php scripts/moodle/grades.php MOODLE_DIR RUN_JSON

define('CLI_SCRIPT', true);
[$script, $moodle, $runfile] = $argv;
require($moodle . '/config.php');
require_once($CFG->libdir . '/gradelib.php');
$run = json_decode(file_get_contents($runfile), true);
$grades = [];
foreach (grade_item::fetch_all(['courseid' => $run['course'], 'itemmodule' => 'lti']) ?: [] as $item) {
    foreach ($run['students'] as $student) {
        $grade = grade_grade::fetch(['itemid' => $item->id, 'userid' => $student['id']]);
        if ($grade && $grade->finalgrade !== null) {
            $grades[$student['username']][$item->itemname] = [
                'finalgrade' => (float) $grade->finalgrade,
                'grademax' => (float) $item->grademax,
                'timemodified' => (int) $grade->timemodified,
            ];
        }
    }
}
echo json_encode($grades, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES) . "\n";
