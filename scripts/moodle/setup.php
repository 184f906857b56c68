<?php
// Moodle's side of the LTI run (scripts/moodle/lti-moodle.sh), through Moodle's own API in its
// CLI: a course of N students and a teacher, `grader serve` registered as an LTI 1.3 external tool
// (its JWKS, login and redirect URLs; grades and the roster as services; launched in a new
// window), and one activity (a resource link) per exercise, graded out of 15. Prints JSON: the
// tool's client_id and deployment id as Moodle made them, the course, the activities, the users.
//
//   php scripts/moodle/setup.php MOODLE_DIR TOOL_URL STUDENTS PASSWORD

define('CLI_SCRIPT', true);
[$script, $moodle, $toolurl, $students, $password] = $argv;
require($moodle . '/config.php');
require_once($CFG->libdir . '/phpunit/classes/util.php');
require_once($CFG->dirroot . '/mod/lti/locallib.php');
\core\session\manager::set_user(get_admin());
$CFG->noemailever = true;  // no mail server: the welcome mails are not sent

$generator = phpunit_util::get_data_generator();
$course = $generator->create_course(['fullname' => 'GPU Programming', 'shortname' => 'GPU2026']);

$type = new stdClass();
$type->state = LTI_TOOL_STATE_CONFIGURED;
$config = new stdClass();
$config->lti_typename = 'GPU self-check';
$config->lti_toolurl = $toolurl . '/lti/launch';
$config->lti_description = 'grader serve: check the exercise on the course GPU';
$config->lti_ltiversion = LTI_VERSION_1P3;
$config->lti_keytype = LTI_JWK_KEYSET;
$config->lti_publickeyset = $toolurl . '/lti/jwks';
$config->lti_initiatelogin = $toolurl . '/lti/login';
$config->lti_redirectionuris = $toolurl . '/lti/launch';
$config->lti_coursevisible = LTI_COURSEVISIBLE_ACTIVITYCHOOSER;
$config->lti_launchcontainer = LTI_LAUNCH_CONTAINER_WINDOW;
$config->lti_sendname = LTI_SETTING_ALWAYS;
$config->lti_sendemailaddr = LTI_SETTING_ALWAYS;
$config->lti_acceptgrades = LTI_SETTING_ALWAYS;
$config->ltiservice_gradesynchronization = 1;  // scores to the activity's own grade item
$config->ltiservice_memberships = 1;            // the roster (NRPS)
$config->lti_contentitem = 0;
$config->lti_organizationid_default = LTI_DEFAULT_ORGID_SITEID;
$typeid = lti_add_type($type, $config);
$tool = $DB->get_record('lti_types', ['id' => $typeid], '*', MUST_EXIST);

$activities = [];
foreach (['day15-bank-conflicts' => 'Bank conflicts (Part 1)', 'day15-padding' => 'Padding (Part 2)']
         as $exercise => $title) {
    $lti = $generator->create_module('lti', [
        'course' => $course->id,
        'name' => $title,
        'typeid' => $typeid,
        'toolurl' => $toolurl . '/lti/launch?exercise=' . $exercise,
        'instructorcustomparameters' => 'exercise=' . $exercise,
        'grade' => 15,
        // No LTI 1.1 key: the generator's default one ('12345') would become the 1.3 launch's aud.
        'resourcekey' => '',
        'password' => '',
        'launchcontainer' => LTI_LAUNCH_CONTAINER_WINDOW,
        'instructorchoicesendname' => 1,
        'instructorchoicesendemailaddr' => 1,
        'instructorchoiceacceptgrades' => 1,
    ]);
    $activities[$exercise] = ['cmid' => (int) $lti->cmid, 'instance' => (int) $lti->id];
}

$users = [];
$teacher = $generator->create_user(['username' => 'teacher01', 'password' => $password,
    'firstname' => 'Pat', 'lastname' => 'Teacher', 'email' => 'teacher01@example.edu']);
$generator->enrol_user($teacher->id, $course->id, 'editingteacher');
for ($i = 1; $i <= (int) $students; $i++) {
    $username = sprintf('student%02d', $i);
    $user = $generator->create_user(['username' => $username, 'password' => $password,
        'firstname' => 'Student', 'lastname' => sprintf('%02d', $i), 'email' => $username . '@example.edu']);
    $generator->enrol_user($user->id, $course->id, 'student');
    $users[] = ['username' => $username, 'id' => (int) $user->id];
}

echo json_encode([
    'issuer' => $CFG->wwwroot,
    'client_id' => $tool->clientid,
    'deployment_id' => (string) $typeid,
    'course' => (int) $course->id,
    'activities' => $activities,
    'teacher' => 'teacher01',
    'students' => $users,
], JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES) . "\n";
