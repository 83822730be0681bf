;;; driver.el --- drive agent-shell against agent-host acp for the tests -*- lexical-binding: t; -*-

;; Loaded by tests/editors/test_agent_shell.py into `emacs --batch' or `emacs -nw'
;; (in tmux), with agent-shell, acp.el and shell-maker on `load-path'.  It reads a
;; plan (JSON, the file named by $AGENT_HOST_TEST_PLAN), opens the plan's files in
;; buffers, starts an agent-shell for `agent-host acp', plays the plan's steps --
;; prompts typed into the shell and submitted, edits a user makes and saves --
;; and writes what it saw as JSON to the plan's "result" file.  Under --batch it
;; then exits; in a terminal it stays up until the test has read the screen.
;;
;; The agent is the documented configuration (agent-host-config.el) with the
;; test's command.  The test-only settings are at the end: a new session each
;; start (no session picker), no transcript file, and permission requests
;; answered "allow once" as a user would.
;;
;; Every wait is bounded by the plan's "timeout" (seconds per step).  The
;; questions Emacs asks (`y-or-n-p', `yes-or-no-p', the supersession and lock
;; questions) are recorded as they are asked: in a terminal they wait for the
;; user (the test sees them in tmux and answers), in batch they fail.

;;; Code:

(require 'cl-lib)
(require 'json)
(require 'map)
(require 'agent-shell)
(load (expand-file-name "agent-host-config.el"
                        (file-name-directory (or load-file-name buffer-file-name)))
      nil t)

(defvar driver--plan nil "The plan, an alist.")
(defvar driver--questions nil "The questions Emacs asked, newest first.")
(defvar driver--shell nil "The agent-shell buffer.")
(defvar driver--ready nil "Non-nil once the session is up: `prompt-ready'.")
(defvar driver--errors nil "The `error' events of the shell, newest first.")
(defvar driver--turn nil "The turn being played: an alist, updated by the events.")
(defvar driver--turn-done nil "Non-nil once the turn being played has completed.")
(defconst driver-done "agent-host test: done"
  "Shown in the echo area, in a terminal, once the result is written.")

(dolist (asker '(y-or-n-p yes-or-no-p ask-user-about-supersession-threat
                 ask-user-about-lock))
  (advice-add asker :before
              (lambda (&rest args)
                (push (format "%s: %s" asker (car args)) driver--questions))))

(defun driver--visible-text (buffer)
  "The text of BUFFER a user sees: without the invisible (folded) parts."
  (with-current-buffer buffer
    (let ((pos (point-min)) (parts nil))
      (while (< pos (point-max))
        (let ((next (next-single-char-property-change pos 'invisible nil (point-max))))
          (unless (invisible-p pos)
            (push (buffer-substring-no-properties pos next) parts))
          (setq pos next)))
      (apply #'concat (nreverse parts)))))

(defun driver--wait (what predicate)
  "Process events until PREDICATE holds; fail naming WHAT after the plan's timeout."
  (let ((deadline (+ (float-time) (map-elt driver--plan 'timeout))))
    (while (not (funcall predicate))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.05)
      (unless noninteractive (redisplay)))))

(defun driver--path (name)
  (expand-file-name name (map-elt driver--plan 'workspace)))

(defun driver--files ()
  "What each plan file holds: in its buffer (if open), on disk, and whether modified."
  (mapcar
   (lambda (name)
     (let* ((path (driver--path name))
            (buffer (find-buffer-visiting path)))
       `((name . ,name)
         (disk . ,(if (file-exists-p path)
                      (with-temp-buffer (insert-file-contents path) (buffer-string))
                    :null))
         (buffer . ,(if buffer
                        (with-current-buffer buffer
                          (save-restriction
                            (widen)
                            (buffer-substring-no-properties (point-min) (point-max))))
                      :null))
         (modified . ,(if (and buffer (buffer-modified-p buffer)) t :false)))))
   (map-elt driver--plan 'files)))

(defun driver--subscribe (shell)
  (agent-shell-subscribe-to
   :shell-buffer shell
   :on-event
   (lambda (event)
     (let ((data (map-elt event :data)))
       (pcase (map-elt event :event)
         ('prompt-ready (setq driver--ready t))
         ('error
          (push `((code . ,(map-elt data :code)) (message . ,(map-elt data :message)))
                driver--errors)
          (when driver--turn (setq driver--turn-done t)))
         ('agent-message-chunk
          (when driver--turn
            (setf (map-elt driver--turn 'text)
                  (concat (map-elt driver--turn 'text) (or (map-elt data :text-chunk) "")))))
         ('tool-call-update
          (when driver--turn
            (setf (map-elt driver--turn 'tools)
                  (cons `((id . ,(map-elt data :tool-call-id))
                          (status . ,(map-nested-elt data '(:tool-call :status))))
                        (map-elt driver--turn 'tools)))))
         ('turn-complete
          (when driver--turn
            (setf (map-elt driver--turn 'stop) (or (map-elt data :stop-reason) :null))
            (setq driver--turn-done t))))))))

(defun driver--checkpoint-seqs ()
  "The checkpoint seqs the last `/checkpoints' turn listed, in order."
  (let ((listing (or (seq-some (lambda (turn)
                                 (and (string-prefix-p "/checkpoints" (map-elt turn 'prompt))
                                      (map-elt turn 'text)))
                               (reverse (map-elt driver--plan 'played)))
                     ""))
        (seqs nil) (start 0))
    (while (string-match "^- \\([0-9]+\\) " listing start)
      (push (match-string 1 listing) seqs)
      (setq start (match-end 0)))
    (nreverse seqs)))

(defun driver--expand (text)
  "TEXT with each {seq:K} replaced by the K-th checkpoint's seq (from 1)."
  (replace-regexp-in-string
   "{seq:\\([0-9]+\\)}"
   (lambda (match)
     (let ((k (string-to-number (substring match 5 -1))))
       (or (nth (1- k) (save-match-data (driver--checkpoint-seqs)))
           (error "No checkpoint %d in the last /checkpoints listing" k))))
   text t t))

(defun driver--prompt (text)
  "Submit TEXT in the shell and wait for the turn to end."
  ;; fresh conses: the turn's fields are set in place as its events arrive
  (setq driver--turn (list (cons 'prompt text) (cons 'text "") (cons 'tools nil)
                           (cons 'stop :null))
        driver--turn-done nil)
  (let ((errors-before (length driver--errors))
        (started (float-time)))
    (with-current-buffer driver--shell
      (agent-shell-insert :text text :submit t :no-focus t :shell-buffer driver--shell))
    (driver--wait (format "the turn of %S" text) (lambda () driver--turn-done))
    ;; from submitting to the turn's end (or its error), as the user waited
    (setf (map-elt driver--turn 'seconds) (- (float-time) started))
    (setf (map-elt driver--turn 'errors)
          (seq-take driver--errors (- (length driver--errors) errors-before))))
  (setf (map-elt driver--turn 'tools) (nreverse (map-elt driver--turn 'tools)))
  (setf (map-elt driver--turn 'files) (driver--files))
  (setf (map-elt driver--plan 'played)
        (append (map-elt driver--plan 'played) (list driver--turn)))
  (setq driver--turn nil))

(defun driver--edit (name text)
  "As a user would: replace the text of NAME's buffer with TEXT and save it."
  (with-current-buffer (find-file-noselect (driver--path name))
    (erase-buffer)
    (insert text)
    (save-buffer)))

(defun driver--refuse-saves (name)
  "Make Emacs refuse to save NAME: a `before-save-hook' that quits, as a
user answering C-g would."
  (with-current-buffer (find-file-noselect (driver--path name))
    (add-hook 'before-save-hook (lambda () (signal 'quit nil)) nil t)))

(defun driver--step (step)
  (cond ((map-elt step 'prompt) (driver--prompt (driver--expand (map-elt step 'prompt))))
        ((map-elt step 'edit) (driver--edit (map-elt step 'edit) (map-elt step 'text)))
        ((map-elt step 'close)
         ;; as a user closing the file: no buffer visits it (until the agent's
         ;; next fs/write_text_file opens one)
         (when-let* ((buffer (find-buffer-visiting (driver--path (map-elt step 'close)))))
           (kill-buffer buffer)))
        ((map-elt step 'follow)
         ;; as a user doing what the last answer says: the first text in it
         ;; matching the step's regexp, submitted as the next prompt
         (let ((said (map-elt (car (last (map-elt driver--plan 'played))) 'text)))
           (unless (and said (string-match (map-elt step 'follow) said))
             (error "The last answer says nothing matching %S: %S" (map-elt step 'follow) said))
           (driver--prompt (match-string 0 said))))
        ((map-elt step 'refuse_saves) (driver--refuse-saves (map-elt step 'refuse_saves)))
        (t (error "Unknown step %S" step))))

(defun driver--result (failure)
  `((failure . ,(or failure :null))
    (ready . ,(if driver--ready t :false))
    (commands . ,(vconcat (mapcar (lambda (c) (map-elt c 'name))
                                  (and driver--shell (buffer-live-p driver--shell)
                                       (map-elt (buffer-local-value 'agent-shell--state driver--shell)
                                                :available-commands)))))
    (turns . ,(vconcat (mapcar (lambda (turn)
                                 (setf (map-elt turn 'tools) (vconcat (map-elt turn 'tools)))
                                 (setf (map-elt turn 'files) (vconcat (map-elt turn 'files)))
                                 (setf (map-elt turn 'errors) (vconcat (map-elt turn 'errors)))
                                 turn)
                               (map-elt driver--plan 'played))))
    (errors . ,(vconcat (reverse driver--errors)))
    (questions . ,(vconcat (reverse driver--questions)))
    (files . ,(vconcat (driver--files)))
    (shell . ,(if (and driver--shell (buffer-live-p driver--shell))
                  (driver--visible-text driver--shell)
                ""))
    ;; the folded parts too (a thought's body), which a user unfolds to read
    (shell_all . ,(if (and driver--shell (buffer-live-p driver--shell))
                      (with-current-buffer driver--shell
                        (buffer-substring-no-properties (point-min) (point-max)))
                    ""))
    (messages . ,(with-current-buffer (messages-buffer)
                   (buffer-substring-no-properties (point-min) (point-max))))))

(defun driver-run ()
  "Play the plan in $AGENT_HOST_TEST_PLAN, write its result and exit."
  (setq driver--plan (json-parse-string
                      (with-temp-buffer
                        (insert-file-contents (getenv "AGENT_HOST_TEST_PLAN"))
                        (buffer-string))
                      :object-type 'alist :array-type 'list :null-object nil))
  (let ((failure nil))
    (condition-case err
        (let ((default-directory (file-name-as-directory (map-elt driver--plan 'workspace))))
          (setq agent-shell-cwd-function (lambda () (map-elt driver--plan 'workspace)))
          (dolist (name (map-elt driver--plan 'open))
            (find-file (driver--path name)))
          ;; the documented configuration, with the test's command: agent-host with
          ;; its stdio recorded
          (setq agent-host-command (map-elt driver--plan 'command))
          (setq driver--shell (agent-shell-start :config (agent-host-agent-config)))
          (driver--subscribe driver--shell)
          (unless noninteractive
            ;; the shell above, the first open file below: as a user works
            (delete-other-windows)
            (switch-to-buffer driver--shell)
            (when (map-elt driver--plan 'open)
              (set-window-buffer (split-window-below)
                                 (find-buffer-visiting (driver--path (car (map-elt driver--plan 'open)))))))
          (driver--wait "the session" (lambda () (or driver--ready driver--errors)))
          (when driver--ready
            (let ((index 0))
              (dolist (step (map-elt driver--plan 'steps))
                (condition-case err
                    (driver--step step)
                  (error (error "Step %d %S: %s" index step
                                (error-message-string err))))
                (setq index (1+ index))))))
      (error (setq failure (error-message-string err))))
    ;; json-serialize gives UTF-8 bytes: written as they are
    (let ((coding-system-for-write 'binary))
      (write-region (json-serialize (driver--result failure)) nil (map-elt driver--plan 'result)))
    ;; In a terminal Emacs stays up, showing what it shows, until the test has
    ;; looked at the screen and ends it: DONE, drawn after all else, says the
    ;; screen is complete.
    (if noninteractive
        (kill-emacs 0)
      (redisplay t)
      (message "%s" driver-done)
      (redisplay t))))

(setq agent-shell-session-strategy 'new
      agent-shell-transcript-file-path-function nil
      agent-shell-show-config-icons nil
      ;; permission requests answered as a user would: allow once
      agent-shell-permission-responder-function #'agent-shell-permission-allow-always)

(if noninteractive
    (driver-run)
  (add-hook 'emacs-startup-hook (lambda () (run-at-time 0 nil #'driver-run))))

;;; driver.el ends here
