using System.Text;

namespace BoundedWork.Cli.Rendering;

/// <summary>
/// Writes to another writer line by line, without the spaces a table or grid pads its lines with at their end, so no
/// line the tool prints ends in spaces or consists of spaces only (a script that reads the output sees empty lines,
/// not lines of blanks). Escape sequences pass through unchanged.
/// </summary>
internal sealed class TrimmingWriter(TextWriter inner) : TextWriter
{
    private readonly StringBuilder _line = new();

    public override Encoding Encoding => inner.Encoding;

    public override void Write(char value)
    {
        if (value == '\n')
        {
            var end = _line.Length;
            while (end > 0 && _line[end - 1] is ' ' or '\r')
            {
                end--;
            }

            inner.Write(_line.ToString(0, end));
            inner.Write('\n');
            _line.Clear();
            return;
        }

        _line.Append(value);
    }

    public override void Write(string? value)
    {
        foreach (var c in value ?? string.Empty)
        {
            Write(c);
        }
    }

    public override void Write(char[] buffer, int index, int count)
    {
        for (var i = index; i < index + count; i++)
        {
            Write(buffer[i]);
        }
    }

    /// <summary>Writes what is left of the current line (a prompt or a live view's last line) and flushes.</summary>
    public override void Flush()
    {
        inner.Write(_line.ToString());
        _line.Clear();
        inner.Flush();
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            Flush();
        }

        base.Dispose(disposing);
    }
}
