// A producer's free text (a notification's body) with its http(s) addresses as links: a runbook
// URL in a page is the first thing a responder opens. Everything else stays text (React escapes
// it); only http and https become links, opened in a new tab without a referrer.

const URL_PATTERN = /(https?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]])/g;

/** ``text`` as paragraphs (blank lines) of text and links. */
export function LinkedText({ text }: { text: string }) {
  return (
    <>
      {text.split(/\n\s*\n/).map((para, i) => (
        <p key={i} className="linked-text">
          {para.split(URL_PATTERN).map((part, j) => (j % 2 === 1
            ? <a key={j} href={part} target="_blank" rel="noopener noreferrer">{part}</a>
            : part))}
        </p>
      ))}
    </>
  );
}
