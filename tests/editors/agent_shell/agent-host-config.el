;;; agent-host-config.el --- agent-host as an agent-shell agent -*- lexical-binding: t; -*-

;; The configuration docs/acp.md gives (tests/editors/test_agent_shell.py checks the
;; two are the same text, and its tests load this file).

(require 'agent-shell)

(defvar agent-host-command '("agent-host" "acp")
  "The command that starts agent-host's ACP server, and its arguments.
For example \\='(\"agent-host\" \"acp\" \"--model\" \"openai/gpt-4.1-mini\").")

(defun agent-host-agent-config ()
  "agent-host as an agent-shell agent."
  (agent-shell-make-agent-config
   :identifier 'agent-host
   :mode-line-name "agent-host"
   :buffer-name "agent-host"
   :shell-prompt "agent-host> "
   :shell-prompt-regexp "agent-host> "
   :client-maker (lambda (buffer)
                   (acp-make-client :command (car agent-host-command)
                                    :command-params (cdr agent-host-command)
                                    :context-buffer buffer))))

(defun agent-host ()
  "Start an agent-shell on agent-host."
  (interactive)
  (agent-shell-start :config (agent-host-agent-config)))

;;; agent-host-config.el ends here
