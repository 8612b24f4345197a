using System.Reflection;
using System.Runtime.CompilerServices;

namespace BoundedWork.Internal;

/// <summary>
/// Turns what an item runs into a name a person can read: the declaring type and method of its delegate, with the
/// C# compiler's decorations decoded (<c>Program+&lt;&gt;c.&lt;&lt;Main&gt;$&gt;b__0_7</c> reads
/// <c>Program.Main (lambda)</c>). Only called when an item is described (statistics, callbacks, logs), never on the
/// item's way through the executor.
/// </summary>
/// <remarks>
/// The decoding follows the names Roslyn generates (<c>&lt;Method&gt;b__…</c> for lambdas, <c>&lt;Method&gt;g__Name|…</c>
/// for local functions, <c>&lt;Main&gt;$</c> for top-level statements, <c>&lt;&gt;c</c> and <c>&lt;&gt;c__DisplayClass…</c>
/// for the classes that hold lambdas). A name it does not recognise is shown as it is.
/// </remarks>
internal static class WorkDescription
{
    /// <summary>Describes an item by what describes it: a delegate, or a task of the TaskScheduler view.</summary>
    public static string Describe(object? source) => source switch
    {
        Delegate work => Describe(work.Method),
        Task task => $"Task {task.Id} (TaskScheduler)",
        _ => "(none)",
    };

    /// <summary>Describes a method: its declaring type's readable name, its own readable name, and its kind if generated.</summary>
    public static string Describe(MethodInfo method)
    {
        var (name, kind) = DecodeMethodName(method.Name);
        var type = method.DeclaringType is { } declaring ? FormatType(UserType(declaring)) : null;
        var described = type is null ? name : $"{type}.{name}";
        return kind is null ? described : $"{described} ({kind})";
    }

    /// <summary>
    /// Decodes a compiler-generated method name: <c>&lt;Run&gt;b__3_0</c> is a lambda in <c>Run</c>,
    /// <c>&lt;Run&gt;g__Send|3_1</c> the local function <c>Send</c> in <c>Run</c>, <c>&lt;Main&gt;$</c> the top-level
    /// statements' <c>Main</c>. Any other name is returned as it is, with no kind.
    /// </summary>
    public static (string Name, string? Kind) DecodeMethodName(string name)
    {
        if (!name.StartsWith('<') || ClosingBracket(name) is not (> 0 and var close))
        {
            return (name switch { ".ctor" => "ctor", ".cctor" => "cctor", _ => name }, null);
        }

        var (outer, _) = DecodeMethodName(name[1..close]);
        var rest = name.AsSpan(close + 1);
        if (rest.StartsWith("b__", StringComparison.Ordinal))
        {
            return (outer, "lambda");
        }

        if (rest.StartsWith("g__", StringComparison.Ordinal))
        {
            var local = rest[3..];
            var bar = local.IndexOf('|');
            return ($"{outer}.{(bar < 0 ? local : local[..bar])}", "local function");
        }

        return rest is "$" ? (outer, null) : (name, null);
    }

    /// <summary>The type a person wrote: compiler-generated closure and state-machine classes give way to the type that declares them.</summary>
    private static Type UserType(Type type)
    {
        while (type.DeclaringType is { } outer && (type.Name.StartsWith('<') || type.IsDefined(typeof(CompilerGeneratedAttribute), inherit: false)))
        {
            type = outer;
        }

        return type;
    }

    /// <summary>Namespace, enclosing types and name, joined with dots, without generic arity (<c>Cache`1</c> reads <c>Cache</c>).</summary>
    private static string FormatType(Type type)
    {
        var name = type.Name;
        var tick = name.IndexOf('`', StringComparison.Ordinal);
        if (tick >= 0)
        {
            name = name[..tick];
        }

        if (type.IsNested && type.DeclaringType is { } outer)
        {
            return $"{FormatType(outer)}.{name}";
        }

        return string.IsNullOrEmpty(type.Namespace) ? name : $"{type.Namespace}.{name}";
    }

    /// <summary>The index of the '&gt;' that closes the '&lt;' at index 0, or -1.</summary>
    private static int ClosingBracket(string name)
    {
        var depth = 0;
        for (var i = 0; i < name.Length; i++)
        {
            depth += name[i] switch { '<' => 1, '>' => -1, _ => 0 };
            if (depth == 0)
            {
                return i;
            }
        }

        return -1;
    }
}
