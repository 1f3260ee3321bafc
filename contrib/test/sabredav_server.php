<?php
// SabreDAV as Debian ships it (php-sabre-dav, SabreDAV 1.8), set up as its "Getting started" file
// server, run by PHP's built-in server as its router script; started by contrib/test/servers.py:
//
//     SABRE_ROOT=DIR SABRE_USER=U SABRE_PASSWORD=P php -S 127.0.0.1:PORT contrib/test/sabredav_server.php
//
// Files are DIR/files (the whole URL space, base URI /), locks DIR/data/locks. Changed from the
// example: Basic auth against SABRE_USER and SABRE_PASSWORD (the example has none; the tests need
// it). Everything else is SabreDAV's default: a PUT whose parent is missing answers 404, MKCOL makes
// one folder at a time (409 without its parent), and PHP's server never sends 100 Continue.
use Sabre\DAV;

require 'Sabre/autoload.php';

class UploaddTestBasicAuth extends DAV\Auth\Backend\AbstractBasic {
    protected function validateUserPass($username, $password) {
        return hash_equals((string) getenv('SABRE_USER'), (string) $username)
            && hash_equals((string) getenv('SABRE_PASSWORD'), (string) $password);
    }
}

$root = getenv('SABRE_ROOT');
$server = new DAV\Server(new DAV\FS\Directory($root . '/files'));
$server->setBaseUri('/');
$server->addPlugin(new DAV\Locks\Plugin(new DAV\Locks\Backend\File($root . '/data/locks')));
$server->addPlugin(new DAV\Auth\Plugin(new UploaddTestBasicAuth(), 'uploadd tests'));
$server->exec();
