<?php
// For use without Composer: registers the PSR-4 autoloader of namespace Freshen\.
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Freshen\\')) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, 8)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
