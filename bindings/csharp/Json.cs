// A small JSON reader and writer, so that the assembly needs no package: libagent speaks JSON
// and the binding builds options, messages and tool results. Values read are
// Dictionary<string, object>, List<object>, string, double, bool and null. Hosts with a JSON
// library of their own (Unity's JsonUtility, System.Text.Json) can use the *Json strings instead.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace LibAgent
{
    public static class Json
    {
        /// <summary>A JSON text to write verbatim inside a value given to Serialize.</summary>
        public sealed class Raw
        {
            public readonly string Text;
            public Raw(string text) { Text = text; }
        }

        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            int i = 0;
            object value = ReadValue(text, ref i, 0);
            SkipSpace(text, ref i);
            if (i != text.Length) throw Bad(text, i);
            return value;
        }

        /// <summary>The member `key` of a parsed object, or null.</summary>
        public static object Get(object obj, string key)
        {
            var map = obj as Dictionary<string, object>;
            object value;
            return map != null && map.TryGetValue(key, out value) ? value : null;
        }

        public static string Quote(string s)
        {
            var sb = new StringBuilder(s.Length + 2);
            WriteString(sb, s);
            return sb.ToString();
        }

        public static string Serialize(object value)
        {
            var sb = new StringBuilder();
            Write(sb, value);
            return sb.ToString();
        }

        static void Write(StringBuilder sb, object value)
        {
            if (value == null) sb.Append("null");
            else if (value is Raw) sb.Append(((Raw)value).Text);
            else if (value is string) WriteString(sb, (string)value);
            else if (value is bool) sb.Append((bool)value ? "true" : "false");
            else if (value is IDictionary)
            {
                sb.Append('{');
                bool first = true;
                foreach (DictionaryEntry entry in (IDictionary)value)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, (string)entry.Key);
                    sb.Append(':');
                    Write(sb, entry.Value);
                }
                sb.Append('}');
            }
            else if (value is IEnumerable)
            {
                sb.Append('[');
                bool first = true;
                foreach (object item in (IEnumerable)value)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    Write(sb, item);
                }
                sb.Append(']');
            }
            else if (value is double || value is float)
            {
                double d = Convert.ToDouble(value, CultureInfo.InvariantCulture);
                if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no NaN or infinity.");
                sb.Append(d.ToString("R", CultureInfo.InvariantCulture));
            }
            else if (value is IConvertible) sb.Append(Convert.ToString(value, CultureInfo.InvariantCulture));
            else throw new ArgumentException("Cannot write a " + value.GetType().Name + " as JSON.");
        }

        static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    default:
                        if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4"));
                        else sb.Append(c);
                        break;
                }
            }
            sb.Append('"');
        }

        // ---- reading -----------------------------------------------------------------------------

        const int MaxDepth = 512;

        static FormatException Bad(string text, int i)
        {
            return new FormatException("Malformed JSON at offset " + i + ".");
        }

        static void SkipSpace(string t, ref int i)
        {
            while (i < t.Length && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
        }

        static object ReadValue(string t, ref int i, int depth)
        {
            if (depth > MaxDepth) throw new FormatException("JSON nested deeper than " + MaxDepth + ".");
            SkipSpace(t, ref i);
            if (i >= t.Length) throw Bad(t, i);
            char c = t[i];
            if (c == '{')
            {
                i++;
                var map = new Dictionary<string, object>();
                SkipSpace(t, ref i);
                if (i < t.Length && t[i] == '}') { i++; return map; }
                while (true)
                {
                    SkipSpace(t, ref i);
                    if (i >= t.Length || t[i] != '"') throw Bad(t, i);
                    string key = ReadString(t, ref i);
                    SkipSpace(t, ref i);
                    if (i >= t.Length || t[i] != ':') throw Bad(t, i);
                    i++;
                    map[key] = ReadValue(t, ref i, depth + 1);
                    SkipSpace(t, ref i);
                    if (i < t.Length && t[i] == ',') { i++; continue; }
                    if (i < t.Length && t[i] == '}') { i++; return map; }
                    throw Bad(t, i);
                }
            }
            if (c == '[')
            {
                i++;
                var list = new List<object>();
                SkipSpace(t, ref i);
                if (i < t.Length && t[i] == ']') { i++; return list; }
                while (true)
                {
                    list.Add(ReadValue(t, ref i, depth + 1));
                    SkipSpace(t, ref i);
                    if (i < t.Length && t[i] == ',') { i++; continue; }
                    if (i < t.Length && t[i] == ']') { i++; return list; }
                    throw Bad(t, i);
                }
            }
            if (c == '"') return ReadString(t, ref i);
            if (Word(t, ref i, "true")) return true;
            if (Word(t, ref i, "false")) return false;
            if (Word(t, ref i, "null")) return null;
            int start = i;
            while (i < t.Length && "+-0123456789.eE".IndexOf(t[i]) >= 0) i++;
            double number;
            if (i == start || !double.TryParse(t.Substring(start, i - start), NumberStyles.Float, CultureInfo.InvariantCulture, out number))
                throw Bad(t, start);
            return number;
        }

        static bool Word(string t, ref int i, string word)
        {
            if (string.CompareOrdinal(t, i, word, 0, word.Length) != 0) return false;
            i += word.Length;
            return true;
        }

        static string ReadString(string t, ref int i)
        {
            i++; // the opening quote
            var sb = new StringBuilder();
            while (i < t.Length)
            {
                char c = t[i++];
                if (c == '"') return sb.ToString();
                if (c != '\\') { sb.Append(c); continue; }
                if (i >= t.Length) break;
                char e = t[i++];
                switch (e)
                {
                    case '"': sb.Append('"'); break;
                    case '\\': sb.Append('\\'); break;
                    case '/': sb.Append('/'); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'n': sb.Append('\n'); break;
                    case 'r': sb.Append('\r'); break;
                    case 't': sb.Append('\t'); break;
                    case 'u':
                        if (i + 4 > t.Length) throw Bad(t, i);
                        sb.Append((char)int.Parse(t.Substring(i, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                        i += 4;
                        break;
                    default: throw Bad(t, i - 1);
                }
            }
            throw Bad(t, i);
        }
    }
}
