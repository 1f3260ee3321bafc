<?php
// A small PHP upload script, as the PHP manual's "POST method uploads" page writes it, run by PHP's
// built-in server as its router script; started by contrib/test/servers.py:
//
//     UPLOAD_ROOT=DIR UPLOAD_USER=U UPLOAD_PASSWORD=P php -S 127.0.0.1:PORT contrib/test/php_upload.php
//
// POST /FOLDER/ (multipart/form-data, the file in the part named "userfile", as in the manual)
// stores the file as DIR/FOLDER/NAME. PHP runs with Debian's php.ini for the CLI unchanged:
// upload_max_filesize = 2M (a larger file arrives as UPLOAD_ERR_INI_SIZE) and post_max_size = 8M
// (a larger body is thrown away: $_FILES is empty). PHP's server never sends 100 Continue and
// answers HTTP/1.1 with Connection: close.
//
// Answers: 201 {"url": ...} when stored; 401 without the right Basic credentials; 400 when no
// file arrived or PHP refused it (the UPLOAD_ERR_* code in the answer); 500 when the file could
// not be moved into place, as for a folder that does not exist (nothing makes folders here).
// GET of a stored file gives its bytes; DELETE removes it (204).
$root = getenv('UPLOAD_ROOT');
$path = rawurldecode(parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH));
if (strpos($path, '..') !== false) { http_response_code(400); exit("bad path\n"); }
header('Content-Type: application/json');

if (($_SERVER['PHP_AUTH_USER'] ?? null) !== getenv('UPLOAD_USER')
    || ($_SERVER['PHP_AUTH_PW'] ?? null) !== getenv('UPLOAD_PASSWORD')) {
    header('WWW-Authenticate: Basic realm="uploadd tests"');
    http_response_code(401);
    exit(json_encode(['error' => 'unauthorized']) . "\n");
}

$method = $_SERVER['REQUEST_METHOD'];
$target = $root . $path;
if ($method === 'GET' || $method === 'HEAD') {
    if (!is_file($target)) { http_response_code(404); exit(json_encode(['error' => 'not found']) . "\n"); }
    header('Content-Type: application/octet-stream');
    header('Content-Length: ' . filesize($target));
    readfile($target);
    exit;
}
if ($method === 'DELETE') {
    if (!is_file($target) || !unlink($target)) { http_response_code(404); exit(json_encode(['error' => 'not found']) . "\n"); }
    http_response_code(204);
    exit;
}
if ($method !== 'POST') { http_response_code(405); exit(json_encode(['error' => 'method not allowed']) . "\n"); }

$file = $_FILES['userfile'] ?? null;
if ($file === null) {
    http_response_code(400);
    exit(json_encode(['error' => 'no file in the part "userfile" (a body over post_max_size is thrown away)']) . "\n");
}
if ($file['error'] !== UPLOAD_ERR_OK) {
    http_response_code(400);
    exit(json_encode(['error' => 'upload error', 'code' => $file['error']]) . "\n");
}
$folder = substr($path, -1) === '/' ? $path : dirname($path) . '/';
$name = basename($file['name']);
if (move_uploaded_file($file['tmp_name'], $root . $folder . $name)) {
    http_response_code(201);
    $url = 'http://' . $_SERVER['HTTP_HOST'] . implode('/', array_map('rawurlencode', explode('/', $folder . $name)));
    echo json_encode(['url' => $url, 'size' => $file['size']]) . "\n";
} else {
    http_response_code(500);
    echo json_encode(['error' => 'could not move the file into ' . $folder]) . "\n";
}
